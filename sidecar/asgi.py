"""Plain ASGI plumbing for the hot route: body reading, responses, disconnect watching.

The chat route runs as a bare ASGI handler rather than through Starlette's Request/Response
objects and anyio task groups: that machinery cost a measurable part of the sidecar's added
latency (see docs/sidecar.md, Performance). The other endpoints stay on Starlette.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from types import TracebackType
from typing import Any

from sidecar.errors import APIError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON_TYPE = (b"content-type", b"application/json")
SSE_TYPE = (b"content-type", b"text/event-stream; charset=utf-8")


class ClientDisconnect(Exception):
    """The client went away before its request body arrived."""


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of request header `name` (lowercase)."""
    return header_value(scope["headers"], name)


def header_value(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first value of header `name` (lowercase) in ASGI's header list."""
    for key, value in headers:
        if key == name:
            return bytes(value)
    return None


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole request body; a 413 `APIError` past `limit` bytes (declared or received)."""
    declared = header(scope, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def too_large(limit: int) -> APIError:
    return APIError(
        413, f"request body exceeds the limit of {limit} bytes", code="request_too_large"
    )


# Compact JSON, non-ASCII kept, no NaN: made once (`json.dumps` with options makes an
# encoder per call).
JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps(payload: Any) -> bytes:
    """Compact JSON, non-ASCII kept (Starlette's JSONResponse rendering). A lone surrogate
    (never valid UTF-8) is written as its JSON escape instead of failing."""
    return JSON.encode(payload).encode("utf-8", "backslashreplace")


async def send_json(
    send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = dumps(payload)
    head = [JSON_TYPE, (b"content-length", b"%d" % len(body))]
    if headers:
        head += headers
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def send_empty(send: Send, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b""})


class BlockCanceller:
    """The base of both disconnect watches (`DisconnectWatch` here, the front's
    `sidecar.front.ConnectionWatch`): once told the client left, it cancels the task that
    entered the block, then at the block's end swallows that cancellation (`gone` is True);
    cancellations from elsewhere pass through."""

    _task: asyncio.Task[Any] | None = None
    gone = False

    def _cancel_block(self) -> None:
        if not self.gone and self._task is not None:
            self.gone = True
            self._task.cancel()

    def _leave(self) -> None:
        """The block ended: stop watching."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._leave()
        if self.gone and self._task is not None:
            # The cancel came while the block was suspended in it, so it surfaced inside
            # the block (also when the awaited result was already there).
            self._task.uncancel()
            return exc_type is asyncio.CancelledError
        return False


class DisconnectWatch(BlockCanceller):
    """`with DisconnectWatch(receive) as watch:` cancels the block when the client leaves.

    A watcher task waits for `http.disconnect` (uvicorn's `send` ignores a gone client, so
    nothing else would notice) and cancels the current task while the block runs; the block's
    `CancelledError` is then swallowed and `watch.gone` is True. The block's own cleanup
    (`finally`) runs first, so an engine connection opened inside is closed, which cancels
    the generation in the engine. Cancellations from elsewhere pass through.

    The watcher starts only once the block has run `delay` seconds: most non-streamed
    requests finish sooner and never pay for a task; a client that left earlier is noticed
    at that point (uvicorn remembers the disconnect).
    """

    def __init__(self, receive: Receive, delay: float = 0.05, armed: bool = True) -> None:
        """`armed=False`: the delay starts at `arm()`, not at entering the block (a request
        arms it once written to the engine: the timer is not on the way there)."""
        self._receive = receive
        self._delay = delay
        self._armed = armed
        self._timer: asyncio.TimerHandle | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._active = False

    def __enter__(self) -> DisconnectWatch:
        self._task = asyncio.current_task()
        self._active = True
        if self._armed:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._start)
        return self

    def arm(self) -> None:
        """Start the delay now (once, and only inside the block)."""
        if self._active and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._start)

    def _start(self) -> None:
        if self._active:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def _leave(self) -> None:
        self._active = False
        if self._timer is not None:
            self._timer.cancel()
        if self._watcher is not None:
            self._watcher.cancel()

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        if self._active:
            self._cancel_block()
