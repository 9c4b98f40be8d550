"""The sidecar's HTTP front (`sidecar.front`): what it writes, write by write; and the
guards of the uvicorn and Jinja internals the sidecar relies on.

The protocol runs for real (a real ASGI app, the event loop); its transport records each
`write`, the one thing a socket cannot show (loopback TCP may merge two sends into one
read). Every HTTP test in this directory serves the sidecar over real sockets
(`sidecar_harness`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from sidecar_harness import uvicorn_tested
from uvicorn.server import ServerState

from sidecar.config import DEFAULT_HEAD_TIMEOUT
from sidecar.front import LeanProtocol
from sidecar.server import server_options

App = Callable[[Any, Any, Any], Awaitable[None]]
JSON_BODY = b'{"ok":true}'


class RecordingTransport(asyncio.Transport):
    """A connected transport that records writes (and whether it was closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def serve(
    app: App, request: bytes, head_timeout: float = DEFAULT_HEAD_TIMEOUT
) -> tuple[Any, RecordingTransport]:
    """A protocol with the sidecar's settings, connected, fed `request` through the same
    buffered-read path a socket uses."""
    options = server_options(head_timeout=head_timeout)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", **options)
    config.load()
    assert issubclass(config.http_protocol_class, LeanProtocol)
    protocol = config.http_protocol_class(config, ServerState(), {})
    transport = RecordingTransport()
    protocol.connection_made(transport)
    feed(protocol, request)
    return protocol, transport


def feed(protocol: Any, data: bytes) -> None:
    buffer = protocol.get_buffer(-1)
    buffer[: len(data)] = data
    protocol.buffer_updated(len(data))


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


GET = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"


async def json_app(scope: Any, receive: Any, send: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(JSON_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": JSON_BODY})


def test_a_whole_response_is_one_write() -> None:
    async def main() -> list[bytes]:
        _, transport = await serve(json_app, GET)
        await turns()
        return transport.writes

    writes = asyncio.run(main())
    assert len(writes) == 1, writes
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[0].endswith(b"\r\n\r\n" + JSON_BODY)


def test_two_requests_on_one_connection_each_get_one_write() -> None:
    async def main() -> list[bytes]:
        protocol, transport = await serve(json_app, GET)
        await turns()
        feed(protocol, GET)
        await turns()
        return transport.writes

    writes = asyncio.run(main())
    assert len(writes) == 2
    assert all(w.startswith(b"HTTP/1.1 200 OK") and w.endswith(JSON_BODY) for w in writes)


def test_a_stream_head_goes_out_before_its_first_event_is_ready() -> None:
    """The held head is sent when the loop turns, not only with the next write."""

    async def main() -> list[list[bytes]]:
        first_event = asyncio.Event()
        seen: list[list[bytes]] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await first_event.wait()
            for event in (b"data: 1\n\n", b"data: 2\n\n"):
                await send({"type": "http.response.body", "body": event, "more_body": True})
                seen.append(list(transport.writes))  # written at once, not held
            await send({"type": "http.response.body", "body": b""})

        _, transport = await serve(app, GET)
        await turns()
        seen.append(list(transport.writes))
        first_event.set()
        await turns()
        seen.append(list(transport.writes))
        return seen

    before, after_first, after_second, final = asyncio.run(main())
    assert len(before) == 1 and before[0].startswith(b"HTTP/1.1 200 OK")
    assert b"transfer-encoding: chunked" in before[0]
    assert after_first[1:] == [b"9\r\ndata: 1\n\n\r\n"]
    assert after_second[1:] == [b"9\r\ndata: 1\n\n\r\n", b"9\r\ndata: 2\n\n\r\n"]
    assert final[-1] == b"0\r\n\r\n"


def test_head_and_first_event_sent_together_when_ready_together() -> None:
    async def main() -> list[bytes]:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
            await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b""})

        _, transport = await serve(app, GET)
        await turns()
        return transport.writes

    writes = asyncio.run(main())
    assert len(writes) == 2
    assert writes[0].startswith(b"HTTP/1.1 200 OK") and writes[0].endswith(b"data: 1\n\n\r\n")
    assert writes[1] == b"0\r\n\r\n"


def test_a_sized_head_waits_for_its_body_across_loop_turns() -> None:
    """A Content-Length response: the head waits for the body (one write), however many
    turns the app takes in between; an app that waits for the client sends its head."""

    async def main() -> tuple[list[bytes], list[bytes]]:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send(
                {"type": "http.response.start", "status": 200,
                 "headers": [(b"content-length", str(len(JSON_BODY)).encode())]}
            )  # fmt: skip
            await asyncio.sleep(0.05)
            if scope["path"] == "/wait":
                await receive()  # the app turns to the client: the head goes out first
            await send({"type": "http.response.body", "body": JSON_BODY})

        _, transport = await serve(app, GET)
        await asyncio.sleep(0.2)
        waiting_app = b"GET /wait HTTP/1.1\r\nhost: x\r\n\r\n"
        _, waiting = await serve(app, waiting_app)
        await asyncio.sleep(0.2)
        return transport.writes, waiting.writes

    writes, waiting = asyncio.run(main())
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200 OK")
    assert writes[0].endswith(b"\r\n\r\n" + JSON_BODY)
    assert len(waiting) == 2 and waiting[0].endswith(b"\r\n\r\n")  # the head alone
    assert waiting[1] == JSON_BODY


def test_a_head_response_without_body_write_is_still_sent() -> None:
    async def main() -> list[bytes]:
        _, transport = await serve(json_app, b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
        await turns()
        return transport.writes

    writes = asyncio.run(main())
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200 OK") and writes[0].endswith(b"\r\n\r\n")


def test_a_held_head_is_written_before_the_connection_closes() -> None:
    """An app failing after starting its response: uvicorn closes the connection; the head
    must precede the close (as it did when written at once)."""

    async def main() -> RecordingTransport:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            raise RuntimeError("app failed mid-response")

        _, transport = await serve(app, GET)
        await turns()
        return transport

    transport = asyncio.run(main())
    assert transport.closed
    assert len(transport.writes) == 1 and transport.writes[0].startswith(b"HTTP/1.1 200 OK")


def test_connection_close_request_gets_the_whole_response_then_the_close() -> None:
    async def main() -> RecordingTransport:
        _, transport = await serve(
            json_app, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        await turns()
        return transport

    transport = asyncio.run(main())
    assert transport.closed
    assert len(transport.writes) == 1 and transport.writes[0].endswith(JSON_BODY)


def test_expect_100_continue_keeps_the_order() -> None:
    async def main() -> list[bytes]:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            message = await receive()
            body = message["body"]
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})

        head = b"POST / HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 5\r\n\r\n"
        protocol, transport = await serve(app, head)
        await turns()
        interim = b"".join(transport.writes)
        feed(protocol, b"hello")
        await turns()
        return [interim, b"".join(transport.writes)]

    interim, everything = asyncio.run(main())
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert everything.startswith(interim + b"HTTP/1.1 200 OK\r\n")
    assert everything.endswith(b"\r\n\r\nhello")


# -- guards: the uvicorn and Jinja internals the sidecar relies on ------------------------


def _pinned(requirement: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The `>=a.b,<c.d` range pyproject.toml pins for `requirement`."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    found = re.search(rf'"{requirement}>=(\d+)\.(\d+),<(\d+)\.(\d+)"', text)
    assert found, f"{requirement} is not pinned to a tested range in pyproject.toml"
    a, b, c, d = map(int, found.groups())
    return (a, b), (c, d)


def test_the_uvicorn_range_the_front_was_tested_with_is_the_pinned_one() -> None:
    """`sidecar.front.LeanProtocol` uses uvicorn's server hooks for protocols
    (`tests/sidecar/test_front.py` names them): the installed uvicorn is a tested one."""
    from sidecar import server

    assert _pinned("uvicorn") == server.UVICORN_TESTED
    assert uvicorn_tested()


def test_an_incomplete_head_is_a_408_after_the_head_timeout() -> None:
    async def main() -> tuple[Any, RecordingTransport]:
        protocol, transport = await serve(json_app, GET, head_timeout=0.05)  # served whole
        await turns()
        feed(protocol, GET[:10])  # half a head
        await asyncio.sleep(0.3)
        return protocol, transport

    _, transport = asyncio.run(main())
    written = b"".join(transport.writes)
    assert written.startswith(b"HTTP/1.1 200 OK") and JSON_BODY in written
    assert b"HTTP/1.1 408 Request Timeout" in written and transport.closed


def test_the_jinja_internals_used_are_there_and_the_fallback_renders_the_same(
    monkeypatch: Any,
) -> None:
    import jinja2

    from sidecar import prompt

    assert _pinned("jinja2") == prompt.JINJA_TESTED
    template = prompt.ChatTemplate.builtin("qwen3", "hermes")
    assert template._compiled["default"].fast  # a tested Jinja, with those internals
    fast = template.render(prompt.SAMPLE_MESSAGES, prompt.SAMPLE_TOOLS, thinking=True)
    monkeypatch.setattr(jinja2, "__version__", "9.0.0")
    slow_template = prompt.ChatTemplate.builtin("qwen3", "hermes")
    assert not slow_template._compiled["default"].fast
    assert slow_template.render(prompt.SAMPLE_MESSAGES, prompt.SAMPLE_TOOLS, thinking=True) == fast
