"""The uvicorn settings the sidecar is served with, and `TimeoutsProtocol`: uvicorn's
httptools protocol closing incomplete requests (the `--http uvicorn` front; the default
front is `sidecar.front.LeanProtocol`).

`SidecarHTTPProtocol`, a subclass sending a response's head with its first body bytes and
receiving into `sidecar.recvbuf`, was removed: toggled alone in `bench_sidecar.py` it showed
no steady gain (docs/sidecar.md, Performance). The lean front does both itself.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sidecar.config import DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT
from sidecar.front import (
    FRAMING_TOO_LARGE,
    MAX_HEAD_BYTES,
    LeanProtocol,
    StageTimer,
    framing_after,
    timeout_response,
    too_large_response,
)


class TimeoutsProtocol(StageTimer, HttpToolsProtocol):
    """uvicorn's httptools protocol closing incomplete requests.

    uvicorn times out only idle kept-alive connections: a client that sends half a request
    head (or a head and half a body) holds its connection forever. Here a request's head must
    be complete within `head_timeout` seconds of its first byte, and its body within
    `body_timeout` seconds of the head's end; otherwise the client gets a 408 (when no
    response has started) and the connection is closed. A new connection that sends nothing
    is closed after uvicorn's keep-alive timeout, like an idle kept-alive one. No timer runs
    for a request that arrives whole in one read (the usual case).
    """

    head_timeout = DEFAULT_HEAD_TIMEOUT
    body_timeout = DEFAULT_BODY_TIMEOUT

    @classmethod
    def with_timeouts(cls, head: float, body: float) -> type[TimeoutsProtocol]:
        """This protocol with other timeouts (uvicorn takes a class)."""
        return type(cls.__name__, (cls,), {"head_timeout": head, "body_timeout": body})

    _stage = "idle"  # idle | head | body: which part of a request is still awaited
    _body_seen = False  # a feed gave body bytes
    _framing = 0  # bytes fed since the last body bytes, while a body is awaited
    _upgraded = False  # an upgrade request was read: nothing after it is parsed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("idle", float(self.timeout_keep_alive))

    def connection_lost(self, exc: Exception | None) -> None:
        self._close_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._upgraded:
            return
        if self._timer_stage == "idle":
            self._disarm()
        self._body_seen = False
        super().data_received(data)
        stage = self._stage
        if stage == "body":
            # uvicorn bounds neither these nor the trailer fields it keeps.
            self._framing = framing_after(self._framing, self._body_seen, len(data))
            if self._framing > MAX_HEAD_BYTES and not self.transport.is_closing():
                cycle = self.cycle
                started = cycle is not None and cycle.response_started
                if not self._earlier_in_progress("body") and not started:
                    self.transport.write(too_large_response(FRAMING_TOO_LARGE, MAX_HEAD_BYTES))
                self.transport.close()
                return
        if stage != "idle" and self._timer_stage != stage:
            self._arm(stage, self.head_timeout if stage == "head" else self.body_timeout)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._stage != "body":  # a chunked body's trailer field is not a request header
            super().on_header(name, value)

    def on_body(self, body: bytes) -> None:
        self._body_seen = True
        super().on_body(body)

    def _unsupported_upgrade_warning(self) -> None:
        # uvicorn serves the request without the body httptools skipped and would parse the
        # bytes after it as further requests: answered, then the connection closes.
        super()._unsupported_upgrade_warning()
        self._upgraded = True
        if self.cycle is not None:
            self.cycle.keep_alive = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._stage = "head"

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._stage = "body"
        self._framing = 0

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._stage = "idle"
        if self._timer_stage in ("head", "body"):
            self._disarm()

    def _earlier_in_progress(self, stage: str) -> bool:
        """An earlier request's response is still being sent: an answer for the request
        being read cannot be written yet (it would land inside that response)."""
        if stage == "head":  # `cycle` is the previous request's
            return self.cycle is not None and not self.cycle.response_complete
        return bool(self.pipeline)  # the request being read waits behind others

    def _expired(self) -> None:
        stage, self._timer_stage = self._timer_stage, ""
        transport = self.transport
        if transport.is_closing():
            return
        if stage != "idle" and (self.flow.read_paused or self._earlier_in_progress(stage)):
            # The server stopped reading (a pipelined request waits its turn) or still
            # answers an earlier request: not the client's delay. Look again later.
            self._arm(stage, self.head_timeout if stage == "head" else self.body_timeout)
            return
        if stage != "idle":
            cycle = self.cycle
            if stage == "head" or cycle is None or not cycle.response_started:
                limit = self.head_timeout if stage == "head" else self.body_timeout
                transport.write(timeout_response(stage, limit))
        transport.close()


# The uvicorn releases whose internals `TimeoutsProtocol` reads and whose server hooks
# `sidecar.front.LeanProtocol` uses were tested (pinned in pyproject.toml; a test checks).
UVICORN_TESTED = ((0, 30), (0, 55))


def _uvicorn_tested() -> bool:
    from uvicorn import __version__

    parts = tuple(int(p) for p in __version__.split(".")[:2] if p.isdigit())
    low, high = UVICORN_TESTED
    return len(parts) == 2 and low <= parts < high


# `--http`: the HTTP/1.1 front serving each connection (docs/sidecar.md, "HTTP front").
FRONTS = ("lean", "uvicorn")
DEFAULT_FRONT = "lean"


def server_options(
    log_level: int = logging.INFO,
    head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    front: str = DEFAULT_FRONT,
) -> dict[str, Any]:
    """The uvicorn settings every sidecar is served with (the CLI's and the tests'); `front`
    picks the per-connection protocol: `sidecar.front.LeanProtocol` or uvicorn's own
    (`TimeoutsProtocol`)."""
    protocol: type[TimeoutsProtocol] | type[LeanProtocol]
    if front == "lean":
        protocol = LeanProtocol
    elif front == "uvicorn":
        protocol = TimeoutsProtocol
    else:
        raise ValueError(f"unknown HTTP front {front!r}: one of {', '.join(FRONTS)}")
    if (head_timeout, body_timeout) != (DEFAULT_HEAD_TIMEOUT, DEFAULT_BODY_TIMEOUT):
        protocol = protocol.with_timeouts(head_timeout, body_timeout)
    return {
        "http": protocol,
        # Keep idle client connections longer than common load-balancer idle timeouts (60 s),
        # so a balancer never reuses a connection the sidecar is closing.
        "timeout_keep_alive": 65,
        # X-Forwarded-* would only change the client address in the access log: nothing the
        # sidecar answers depends on it, and uvicorn's middleware for it cost ~0.05 ms/request.
        "proxy_headers": False,
        # No `server: uvicorn` header: it names the implementation to every client and costs
        # a header's validation and bytes on each response (the `date` header stays).
        "server_header": False,
        # Access lines are INFO records: above that level uvicorn would still build each one.
        "access_log": log_level <= logging.INFO,
    }
