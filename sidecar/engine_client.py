"""HTTP I/O with the engine: one pooled client (`sidecar.http1`), errors mapped to `EngineError`."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from sidecar import http1
from sidecar.asgi import JSON
from sidecar.config import Timeouts
from sidecar.engines.base import EngineAdapter, EngineEvent, EngineRequest, malformed
from sidecar.errors import EngineError
from sidecar.sse import DONE, SSEDecoder

log = logging.getLogger("sidecar.engine")
_JSON = (("content-type", "application/json"),)
_ERROR_BODY_LIMIT = 65536  # bytes of an engine's error answer read for its message
# The largest engine response body (non-streamed) and the longest SSE line (streamed) read:
# far past any generation's text (a 1M-token answer is a few MB of JSON), and a bound on the
# memory a broken or hostile engine can take.
MAX_RESPONSE_BYTES = 64 * 2**20
_BOM = b"\xef\xbb\xbf"


class Body(Protocol):
    """A response body being received (`http1.Response`)."""

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


def _error_message(body: bytes) -> str:
    """The engine's own error message when it sent one, else a short excerpt."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return body[:200].decode("utf-8", "replace")
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail")
            if isinstance(msg, str):
                return _printable(msg)
        detail = data.get("detail") or data.get("message")
        if isinstance(detail, str):
            return _printable(detail)
    return body[:200].decode("utf-8", "replace")


def _printable(text: str) -> str:
    """The engine's text as valid Unicode (a lone surrogate written as its escape)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class EngineStream:
    """An open streamed engine response; iterate it for events, always `aclose()` it."""

    def __init__(
        self,
        response: Body,
        adapter: EngineAdapter,
        timeout: float,
        max_line: int = MAX_RESPONSE_BYTES,
        head: http1.Head | None = None,
    ):
        """`head`: the response's head, read only to explain a stream that was no stream."""
        self._response = response
        self._decoder = adapter.decoder()
        self._timeout = timeout
        self._max_line = max_line
        self._head = head

    async def batches(self) -> AsyncIterator[list[EngineEvent]]:
        """Events grouped by network read: whatever arrived together is relayed together
        (one write to the client instead of one per event when the engine runs ahead)."""
        sse = SSEDecoder()
        finished = False
        # The unterminated line so far, in the pieces it arrived in: joined once its newline
        # arrives (concatenating on every read made one long line quadratic to read).
        pending: list[bytes] = []
        pending_size = 0
        first = True  # the stream's first line: a UTF-8 BOM before it is dropped (SSE rules)
        batch: list[EngineEvent] = []

        def take(data: str | None) -> bool:
            """Decode one SSE event into `batch`; True at `[DONE]`."""
            nonlocal finished
            if data is None:
                return False
            if data == DONE:
                return True
            event = self._decoder.decode(_json(data))
            finished = finished or event.finish_reason is not None
            batch.append(event)
            return False

        try:
            done = False
            async for raw in self._response.aiter_bytes():
                if b"\n" not in raw:
                    pending.append(raw)
                    pending_size += len(raw)
                    if pending_size > self._max_line:
                        raise self._too_long("event line")
                    continue
                # A newline byte never occurs inside a UTF-8 sequence: split bytes, then decode.
                if pending:  # the long line is joined once, not split again
                    newline = raw.index(b"\n")
                    pending.append(raw[:newline])
                    lines = [b"".join(pending), *raw[newline + 1 :].split(b"\n")]
                    if len(lines[0]) > self._max_line:
                        raise self._too_long("event line")
                else:
                    lines = raw.split(b"\n")
                if first:
                    first = False
                    lines[0] = lines[0].removeprefix(_BOM)
                last = lines.pop()
                pending, pending_size = [last], len(last)
                for line in lines:
                    done = take(_sse_line(sse, line))
                    if done:
                        break
                if sse.size > self._max_line:  # an event of many lines, none ending it
                    raise self._too_long("event")
                if batch:
                    yield batch
                    batch = []
                if done:
                    break
            if not done:
                last = b"".join(pending)
                if first:
                    last = last.removeprefix(_BOM)
                if last:
                    take(_sse_line(sse, last))
                take(sse.flush())
        except EngineError:
            if batch:  # events decoded before the bad one are delivered, then the error
                yield batch
            raise
        except http1.HTTPError as exc:
            raise _transport_failure(
                exc, self._timeout, "engine closed the stream before finishing"
            ) from None
        if batch:
            yield batch
        if not finished:
            if done:  # `[DONE]` with no finish reason before it: as a complete response's
                raise malformed("the stream ended with no finish reason")
            kind = self._head.get("content-type") if self._head is not None else None
            if kind is not None and not kind.lower().startswith("text/event-stream"):
                raise malformed(  # an engine (or a proxy) that ignored `stream: true`
                    f"the streamed request was answered with content-type {kind[:80]!r}, "
                    "not an event stream"
                )
            raise EngineError(
                502, "engine closed the stream before finishing", "engine_stream_closed"
            )

    def _too_long(self, what: str) -> EngineError:
        return malformed(f"an {what} longer than {self._max_line} bytes")

    async def aclose(self) -> None:
        await self._response.aclose()


def _sse_line(sse: SSEDecoder, line: bytes) -> str | None:
    """Feed one line (bytes, without its newline); a `data:` line's value is decoded straight
    from the line's buffer (a long event is copied as few times as possible)."""
    end = len(line) - 1 if line.endswith(b"\r") else len(line)
    if line.startswith(b"data:"):
        start = 6 if line[5:6] == b" " else 5
        sse.data(str(memoryview(line)[start:end], "utf-8", "replace"))
        return None
    return sse.line(str(memoryview(line)[:end], "utf-8", "replace"))


def _transport_failure(exc: http1.HTTPError, read_timeout: float, what: str) -> EngineError:
    """A timeout is a 504 (the engine went silent); bytes that are not HTTP a malformed
    response (502); any other transport failure a 502 too."""
    if isinstance(exc, http1.ReadTimeout):
        return EngineError(504, f"engine sent nothing for {read_timeout:g}s", "engine_timeout")
    if isinstance(exc, http1.ProtocolError):
        return malformed(str(exc))
    return EngineError(502, f"{what} ({exc!r})", "engine_stream_closed")


_RETRY_AFTER = re.compile(r"[0-9A-Za-z ,:]{1,64}")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _json(data: str) -> Any:
    """An engine payload; JSON the sidecar could not pass on is a malformed response: not
    JSON, nested past the decoder's stack, or text holding a lone surrogate (`"\\ud800"`:
    never valid UTF-8). An integer over Python's digit limit is no count the sidecar uses:
    it is taken as absent (null), like any out-of-range token count."""
    try:
        try:
            value = json.loads(data)
        except ValueError:  # decoded again only then: the hook costs a call per integer
            value = json.loads(data, parse_int=_int_or_none)
    except ValueError:
        raise malformed(f"event data is not JSON: {data[:80]!r}") from None
    except RecursionError:
        raise malformed("event data nests too deeply") from None
    # A one-character `in` first (memchr): the regex only runs on data with escapes at all.
    if "\\" in data and _ESCAPED_SURROGATE.search(data) and _has_surrogate(value):
        raise malformed("event data holds a lone UTF-16 surrogate (not valid Unicode)")
    return value


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # over the digit limit
        return None


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class EngineClient:
    def __init__(
        self,
        base_url: str,
        adapter: EngineAdapter,
        timeouts: Timeouts,
        *,
        api_key: str | None = None,
        ca_bundle: str | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        """`api_key`: sent as `Authorization: Bearer` (an engine started with `--api-key`);
        `ca_bundle`: the CA certificates trusted for an https engine; `max_response_bytes`:
        the largest response body and SSE line read (past it: a malformed response)."""
        self.base_url = base_url.rstrip("/")
        self.max_response_bytes = max_response_bytes
        self.adapter = adapter
        self.timeouts = timeouts
        https = self.base_url.startswith("https://")
        self._client = http1.Client(
            self.base_url,
            connect_timeout=timeouts.connect,
            read_timeout=timeouts.read,
            ssl_context=http1.ssl_context(ca_bundle) if https else None,
            authorization=f"Bearer {api_key}" if api_key else None,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def healthy(self) -> bool:
        try:
            response = await self._client.request(
                "GET", self.adapter.health_path, timeout=self.timeouts.health
            )
            try:
                await response.read()
            finally:
                await response.aclose()
        except http1.HTTPError:
            return False
        return response.status == 200

    async def _send(
        self, request: EngineRequest, meanwhile: Callable[[], object] | None, whole: bool = False
    ) -> http1.Response:
        # Compact JSON, non-ASCII kept, no NaN (what httpx's `json=` sent).
        body = JSON.encode(self.adapter.build_body(request)).encode()
        try:
            response = await self._client.request(
                "POST", self.adapter.generate_path, body, _JSON, meanwhile=meanwhile, whole=whole
            )
        except http1.ConnectError as exc:
            raise EngineError(
                503, f"engine unreachable at {self.base_url} ({exc!r})", "engine_unavailable"
            ) from None
        except http1.HTTPError as exc:
            raise _transport_failure(exc, self.timeouts.read, "engine connection failed") from None
        if response.status != 200:
            pieces: list[bytes] = []
            try:
                # Only the start of an error body is kept (a huge one is not read to its end:
                # its connection is closed).
                size = 0
                async for piece in response.aiter_bytes():
                    pieces.append(piece)
                    size += len(piece)
                    if size >= _ERROR_BODY_LIMIT:
                        break
            except http1.HTTPError:
                pass
            finally:
                await response.aclose()
            raw = b"".join(pieces)[:_ERROR_BODY_LIMIT]
            message = _error_message(raw)
            log.warning("engine answered HTTP %s: %s", response.status, message)
            if response.status == 429:
                # Overloaded: the client should retry later; the engine's Retry-After is kept.
                retry_after = response.head.get("retry-after")
                if retry_after is not None and not _RETRY_AFTER.fullmatch(retry_after):
                    retry_after = None  # only delta-seconds or an HTTP date is passed on
                raise EngineError(
                    429,
                    f"engine is rate limiting requests: {message}",
                    "engine_rate_limited",
                    headers=(("retry-after", retry_after),) if retry_after else (),
                )
            if response.status in (401, 403):
                # The engine refused the sidecar's credentials: the operator's to fix.
                raise EngineError(
                    502,
                    f"engine refused the sidecar's credentials (HTTP {response.status}; "
                    f"see --engine-api-key): {message}",
                    "engine_unauthorized",
                )
            if 400 <= response.status < 500:
                raise EngineError(400, f"engine rejected the request: {message}", "engine_rejected")
            raise EngineError(
                502, f"engine answered HTTP {response.status}: {message}", "engine_error"
            )
        return response

    async def open_stream(
        self, request: EngineRequest, meanwhile: Callable[[], object] | None = None
    ) -> EngineStream:
        """Send a streamed request; raises `EngineError` before anything is streamed.
        `meanwhile` runs once the request is written, while the engine works."""
        response = await self._send(request, meanwhile)
        return EngineStream(
            response, self.adapter, self.timeouts.read, self.max_response_bytes, response.head
        )

    async def complete(
        self, request: EngineRequest, meanwhile: Callable[[], object] | None = None
    ) -> EngineEvent:
        """The whole response to a non-streamed request (`meanwhile` as for `open_stream`)."""
        response = await self._send(request, meanwhile, whole=True)
        try:
            raw = await response.read(self.max_response_bytes)
        except http1.HTTPError as exc:
            raise _transport_failure(
                exc, self.timeouts.read, "engine closed the connection"
            ) from None
        finally:
            # Not awaited: also runs to the end when the client went away (cancelled),
            # closing an unfinished connection, which cancels the generation in the engine.
            response.close()
        event = self.adapter.decode_response(_json(raw.decode("utf-8", "replace")))
        if event.finish_reason is None:
            raise malformed("response has no finish reason")
        return event
