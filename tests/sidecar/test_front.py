"""HTTP/1.1 behaviour of the sidecar's front (`sidecar.front`) over real loopback sockets,
serving small ASGI apps: keep-alive, pipelining, chunked and 100-continue request bodies,
limits, malformed requests, HEAD, disconnects, backpressure and graceful shutdown; and the
connection's state table."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from sidecar_harness import uvicorn_tested
from uvicorn.server import ServerState

from sidecar import front as lean
from sidecar.connstate import (
    BODY,
    COMPLETE,
    DONE,
    HEAD,
    IDLE,
    PENDING,
    STARTED,
    TRANSITIONS,
    UPGRADING,
    ConnStateError,
    ReadState,
    ResponseState,
    advance,
)
from sidecar.errors import APIError
from sidecar.exchange import Exchange
from sidecar.fake_engine import RunningServer, serve_in_thread
from sidecar.server import server_options

pytestmark = pytest.mark.parser_mode_independent(reason="HTTP framing only, no parsing")


class App:
    """Echoes the request (method, path, query, body) as JSON; `/slow` waits until released;
    `/big` streams `chunks` MiB; `/fail` raises; `/gone` records the disconnect it sees.
    `/direct...` is served as an `Exchange` (as the sidecar's chat route): the front calls
    it directly (`direct_route`)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.sent_chunks = 0
        self.disconnects = 0
        self.called_at: list[float] = []  # when each HTTP request reached the app
        self.exchanges: list[str] = []  # the type of each `Exchange` served
        self.watched: list[bool] = []  # `watch.gone` after each `/direct-wait`

    def direct_route(self, method: str, path: str) -> Any:
        return self.direct if path.startswith("/direct") and method == "POST" else None

    async def direct(self, exchange: Exchange) -> None:
        self.exchanges.append(type(exchange).__name__)
        try:
            body = await exchange.read_body(1000)
        except APIError as exc:
            await exchange.respond_json(exc.status, exc.body())
            return
        if exchange.header(b"x-wait") is not None:
            with exchange.watch(armed=False) as watch:
                watch.arm()
                await asyncio.sleep(30)  # until the client leaves
            self.watched.append(watch.gone)
            return
        answer = {"body": body.decode(), "x-echo": (exchange.header(b"x-echo") or b"").decode()}
        await exchange.respond_json(201, answer, [(b"x-route", b"direct")])

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        path = scope["path"]
        self.called_at.append(time.monotonic())
        if path == "/fail":
            raise RuntimeError("the app failed")
        if path.startswith("/header/"):  # one response header from the path: name=value
            name, _, value = path[8:].encode().partition(b"=")
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(name.replace(b"_", b" "), value.replace(b"_", b"\n")),
                                    (b"content-length", b"2")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b"ok"})
            return
        if path == "/big":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for _ in range(64):
                await send({"type": "http.response.body", "body": b"x" * (1 << 20),
                            "more_body": True})  # fmt: skip
                self.sent_chunks += 1
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnects += 1
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if path == "/slow":
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        if path == "/gone":
            message = await receive()  # blocks until the client leaves
            self.disconnects += message["type"] == "http.disconnect"
            return
        if path == "/gone-twice":  # two receivers waiting at once: both hear of it
            messages = await asyncio.gather(receive(), receive())
            self.disconnects += sum(m["type"] == "http.disconnect" for m in messages)
            return
        if len(body) > 1000:
            payload = b'{"error":"too large"}'
            await send({"type": "http.response.start", "status": 413,
                        "headers": [(b"content-length", str(len(payload)).encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": payload})
            return
        answer = json.dumps(
            {"method": scope["method"], "path": path, "query": scope["query_string"].decode(),
             "body": body.decode(), "http_version": scope["http_version"]}
        ).encode()  # fmt: skip
        await send(
            {"type": "http.response.start", "status": 200,
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(answer)).encode())]}
        )  # fmt: skip
        await send({"type": "http.response.body", "body": answer})


@pytest.fixture
def served() -> Iterator[tuple[int, App, RunningServer]]:
    app = App()
    server = serve_in_thread(app, **server_options())
    try:
        yield int(server.url.rsplit(":", 1)[1]), app, server
    finally:
        app.release.set()
        server.stop()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _responses(sock: socket.socket, count: int) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """Read `count` whole responses (Content-Length or chunked framing)."""
    buffer = b""
    out = []
    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            piece = sock.recv(65536)
            assert piece, f"closed after {len(out)} responses: {buffer[:200]!r}"
            buffer += piece
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines)
        if status.startswith(b"HTTP/1.1 100"):
            continue
        body = b""
        if b"content-length" in headers:
            size = int(headers[b"content-length"])
            while len(buffer) < size:
                buffer += sock.recv(65536)
            body, buffer = buffer[:size], buffer[size:]
        elif headers.get(b"transfer-encoding") == b"chunked":
            while True:
                while b"\r\n" not in buffer:
                    buffer += sock.recv(65536)
                line, buffer = buffer.split(b"\r\n", 1)
                size = int(line, 16)
                while len(buffer) < size + 2:
                    buffer += sock.recv(65536)
                body, buffer = body + buffer[:size], buffer[size + 2 :]
                if size == 0:
                    break
        out.append((status, headers, body))
    return out


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def _read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = bytearray()
    while piece := sock.recv(1 << 20):
        data += piece
    return bytes(data)


def _send_until_refused(sock: socket.socket, piece: bytes, times: int) -> None:
    """Send `piece` `times` times, stopping where the server closes on us (its answer is
    then already on the way)."""
    for _ in range(times):
        try:
            sock.sendall(piece)
        except OSError:
            return


def _post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n%s\r\n"
        % (path.encode(), len(body), extra)
        + body
    )


def test_keep_alive_and_pipelined_requests_are_answered_in_order(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        # one write holding five requests, the first slow to answer
        sock.sendall(b"".join(_post(f"/{i}", b"body %d" % i) for i in range(5)))
        answers = _responses(sock, 5)
        assert [json.loads(body)["path"] for _, _, body in answers] == [f"/{i}" for i in range(5)]
        assert [json.loads(body)["body"] for _, _, body in answers] == [
            f"body {i}" for i in range(5)
        ]
        sock.sendall(_post("/again", b""))  # the connection stays open
        assert json.loads(_responses(sock, 1)[0][2])["path"] == "/again"


def test_a_pipelined_request_waits_for_the_slow_one_before_it(served: Any) -> None:
    port, app, _ = served
    with _connect(port) as sock:
        sock.sendall(_post("/slow", b"first") + _post("/fast", b"second"))
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(65536)  # the second is not answered before the first
        app.release.set()
        sock.settimeout(10)
        answers = _responses(sock, 2)
        assert [json.loads(body)["body"] for _, _, body in answers] == ["first", "second"]


def test_a_chunked_request_body_arrives_whole(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"POST /c?x=1 HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n")  # fmt: skip
        time.sleep(0.1)
        sock.sendall(b"6\r\n world\r\n0\r\n\r\n")
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200")
        assert json.loads(body) == {"method": "POST", "path": "/c", "query": "x=1",
                                    "body": "hello world", "http_version": "1.1"}  # fmt: skip


def test_expect_100_continue_is_answered_before_the_body_is_sent(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"POST /e HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n"
                     b"content-length: 5\r\n\r\n")  # fmt: skip
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hello")
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["body"] == "hello"


def test_an_answer_before_the_body_is_read_gets_no_100_continue(served: Any) -> None:
    """The app answers 413 from the declared length: the client is never told to send."""
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n"
                     b"content-length: 5000000\r\n\r\n")  # fmt: skip
        data = sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 200 OK\r\n"), data[:100]  # no 100 first


def test_a_body_over_the_limit_gets_the_apps_413_and_the_connection_goes_on(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(_post("/large", b"y" * 5000) + _post("/after", b"ok"))
        (first, _, _), (second, _, body) = _responses(sock, 2)
        assert first.startswith(b"HTTP/1.1 413") and second.startswith(b"HTTP/1.1 200")
        assert json.loads(body)["path"] == "/after"


def test_a_malformed_request_is_a_400_and_closes(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        ((bad, headers, body),) = _responses(sock, 1)
        assert bad.startswith(b"HTTP/1.1 400") and headers[b"connection"] == b"close"
        assert _closed(sock)
    with _connect(port) as sock:
        sock.sendall(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n")
        (ok, _, _), (bad, headers, body) = _responses(sock, 2)
        assert ok.startswith(b"HTTP/1.1 200") and bad.startswith(b"HTTP/1.1 400")
        error = json.loads(body)["error"]  # an OpenAI-style error naming the problem
        assert error["code"] == "bad_request"
        assert error["message"].startswith("malformed HTTP request: ")
        assert _closed(sock)


def test_a_head_over_the_limit_is_a_431_and_closes(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        # one header over the limit, arriving in pieces and never finished (refused at most
        # one network read past the limit)
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\nx-big: ")
        _send_until_refused(sock, b"a" * 16384, 3 * lean.MAX_HEAD_BYTES // 16384)
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 431")
        assert json.loads(body)["error"]["code"] == "request_header_fields_too_large"
        assert _closed(sock)
    with _connect(port) as sock:  # many headers, arriving whole in one write
        headers = b"".join(b"x-h%d: %s\r\n" % (i, b"v" * 1000) for i in range(70))
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n" + headers + b"\r\n")
        ((status, _, _),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 431")
    with _connect(port) as sock:  # a large head under the limit is served
        headers = b"".join(b"x-h%d: %s\r\n" % (i, b"v" * 1000) for i in range(40))
        sock.sendall(b"GET /fine HTTP/1.1\r\nhost: x\r\n" + headers + b"\r\n")
        ((status, _, _),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200")


def test_head_gets_the_head_without_a_body(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"HEAD /h HTTP/1.1\r\nhost: x\r\n\r\nGET /next HTTP/1.1\r\nhost: x\r\n\r\n")
        sock.settimeout(5)
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
            data += sock.recv(65536)
        head_response, rest = data.split(b"\r\n\r\n", 1)
        assert b"content-length: " in head_response
        assert rest.startswith(b"HTTP/1.1 200")  # no body bytes between the two
        assert b'"path": "/next"' in rest


def test_http_1_0_and_connection_close_end_the_connection(served: Any) -> None:
    port, _, _ = served
    for request in (b"GET /a HTTP/1.0\r\n\r\n", b"GET /b HTTP/1.1\r\nconnection: close\r\n\r\n"):
        with _connect(port) as sock:
            sock.sendall(request)
            data = _read_to_close(sock)
            assert data.startswith(b"HTTP/1.1 200") and b"connection: close\r\n" in data


def test_a_stream_to_http_1_0_is_close_delimited(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /big HTTP/1.0\r\n\r\n")
        data = _read_to_close(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding" not in head.lower()
    assert body == b"x" * (64 << 20)  # raw bytes up to the close, no chunk framing


def test_an_app_failure_is_a_500_and_the_server_goes_on(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /fail HTTP/1.1\r\nhost: x\r\n\r\n")
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 500") and body == b"Internal Server Error"
    with _connect(port) as sock:
        sock.sendall(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
        assert _responses(sock, 1)[0][0].startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(("path", "receivers"), [("/gone", 1), ("/gone-twice", 2)])
def test_a_client_leaving_is_an_http_disconnect(served: Any, path: str, receivers: int) -> None:
    port, app, _ = served
    sock = _connect(port)
    sock.sendall(_post(path, b"x"))
    time.sleep(0.2)
    sock.close()
    deadline = time.monotonic() + 10
    while app.disconnects < receivers and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
    assert app.disconnects == receivers


def test_a_client_not_reading_holds_the_sender_back(served: Any) -> None:
    """Backpressure: the app's `send` waits while the client reads nothing, instead of the
    server buffering the whole 64 MiB response."""
    port, app, _ = served
    with _connect(port) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n")
        time.sleep(0.5)
        assert app.sent_chunks < 16, app.sent_chunks  # held back: not 64 MiB buffered
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and len(body) == 64 << 20
        assert app.sent_chunks == 64


def test_graceful_shutdown_finishes_the_request_in_flight(served: Any) -> None:
    port, app, server = served
    busy, idle = _connect(port), _connect(port)
    busy.sendall(_post("/slow", b"in flight"))
    time.sleep(0.2)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    time.sleep(0.3)
    assert _closed(idle)  # an idle connection is closed at once
    app.release.set()
    ((status, headers, body),) = _responses(busy, 1)
    assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["body"] == "in flight"
    assert headers.get(b"connection") == b"close"
    assert _closed(busy)
    stopper.join(10)
    busy.close()
    idle.close()
    with pytest.raises(OSError):
        _connect(port).close()  # no longer listening


def test_an_upgrade_request_is_answered_as_plain_http(served: Any) -> None:
    """The upgrade is ignored: the request is answered and the connection goes on."""
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\n"
                     b"upgrade: websocket\r\n\r\n")  # fmt: skip
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["path"] == "/ws"
        sock.sendall(b"GET /next HTTP/1.1\r\nhost: x\r\n\r\n")
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["path"] == "/next"


UPGRADE = b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABk\r\n"
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n"


@pytest.mark.parametrize("split", [False, True], ids=["one-write", "body-later"])
def test_an_upgrade_requests_body_is_its_body_never_a_request(served: Any, split: bool) -> None:
    """`curl --http2` on a plain port: the body is read as the request's, never parsed as a
    request."""
    port, _, _ = served
    with _connect(port) as sock:
        head, body = _post("/up", SMUGGLED, UPGRADE).split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\n\r\n" + (b"" if split else body))
        if split:
            time.sleep(0.2)
            sock.sendall(body)
        ((status, _, answer),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200")
        assert json.loads(answer)["body"] == SMUGGLED.decode()
        chunked = (b"POST /up2 HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
                   + UPGRADE + b"\r\n5\r\nhello\r\n0\r\n\r\n")  # fmt: skip
        sock.sendall(chunked + b"GET /after HTTP/1.1\r\nhost: x\r\n\r\n")
        (_, _, first), (_, _, second) = _responses(sock, 2)
        assert json.loads(first)["body"] == "hello"
        assert json.loads(second)["path"] == "/after"


@pytest.mark.parametrize(
    "bad",
    [b"zz\r\n", b"5\r\nhelloXX", b"-5\r\n", b"ffffffffffffffffffff\r\n", b"5\r\nhello\r\nq\r\n"],
    ids=["not-hex", "no-crlf", "negative", "overflow", "after-a-good-one"],
)
@pytest.mark.parametrize(
    "first", [b"", b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n"], ids=["alone", "pipelined"]
)
def test_bad_chunk_framing_is_a_prompt_400_and_closes(
    served: Any, bad: bytes, first: bytes
) -> None:
    """The request's app waits for its body: it is answered at once, never left waiting
    (the connection held open past every timeout), and the app sees the client gone."""
    port, _, _ = served
    with _connect(port) as sock:
        started = time.monotonic()
        sock.sendall(first + b"POST /c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n")
        time.sleep(0.05)  # the app is waiting for the body
        sock.sendall(bad)
        answers = _responses(sock, 2 if first else 1)
        assert [a[0][:12] for a in answers] == [b"HTTP/1.1 200"] * bool(first) + [b"HTTP/1.1 400"]
        assert _closed(sock) and time.monotonic() - started < 3


def test_trailer_fields_are_never_request_headers(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"POST /direct HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"2\r\nhi\r\n0\r\nx-echo: from-the-trailer\r\n\r\n")  # fmt: skip
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 201")
        assert json.loads(body) == {"body": "hi", "x-echo": ""}


def test_endless_trailers_are_a_431_not_memory(served: Any) -> None:
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"POST /c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"2\r\nhi\r\n0\r\n")  # fmt: skip
        _send_until_refused(sock, b"a: b\r\n" * 1500, 200)  # 2 MB of trailers, 9 KB a write
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 431")
        assert "trailer fields exceed 65536 bytes" in json.loads(body)["error"]["message"]


def test_the_uvicorn_server_hooks_the_front_uses_are_there() -> None:
    """The front is a protocol class handed to uvicorn's server (`http=`); it reads and
    updates what the server shares with its protocols. Graceful shutdown above exercises
    `shutdown()` and `connections`; this names the rest."""
    assert uvicorn_tested()  # inside the range pyproject.toml pins
    state = ServerState()
    assert isinstance(state.connections, set) and isinstance(state.tasks, set)
    assert isinstance(state.default_headers, list) and state.total_requests == 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        pass

    config = uvicorn.Config(app, **server_options())
    assert config.loaded is False
    config.load()
    assert config.loaded is True
    assert config.http_protocol_class is lean.LeanProtocol
    for name in ("loaded_app", "root_path", "asgi_version", "timeout_keep_alive"):
        assert hasattr(config, name), name


@pytest.mark.parametrize("path", ["/header/X-Route=a", "/header/bad_name=a", "/header/x-v=a_b"])
def test_response_header_names_are_lowercased_and_bad_ones_refused(served: Any, path: str) -> None:
    """A valid name is sent lowercased with the server's `date` header, every time (the lean
    front remembers names it checked); a name with a blank or a value with a newline is
    the app's bug: the connection closes without a response."""
    port, _, _ = served
    with _connect(port) as sock:
        for _ in range(2):
            sock.sendall(b"GET %s HTTP/1.1\r\nhost: x\r\n\r\n" % path.encode())
            if path != "/header/X-Route=a":
                assert _closed(sock)
                return
            raw = b""
            while not raw.endswith(b"\r\n\r\nok"):
                piece = sock.recv(65536)
                assert piece, raw
                raw += piece
            assert raw.startswith(b"HTTP/1.1 200")
            assert b"\r\nx-route: a\r\n" in raw and b"\r\ndate: " in raw


def test_a_small_body_is_in_before_the_front_calls_the_app(served: Any) -> None:
    """The front calls the app once a small Content-Length body is in (one wake-up of the
    app for a client writing head and body apart). A client leaving mid-body still reaches
    the app, which sees the disconnect."""
    port, app, _ = served
    with _connect(port) as sock:
        request = _post("/late", b"late body")
        head_end = request.index(b"\r\n\r\n") + 4
        sock.sendall(request[:head_end])
        sent_head = time.monotonic()
        time.sleep(0.3)
        sock.sendall(request[head_end:])
        ((status, _, body),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["body"] == "late body"
    waited = app.called_at[-1] - sent_head
    assert waited >= 0.25
    # A body over 64 KiB, or a chunked one (whatever the header order), starts the app at
    # the head.
    big = _post("/late", b"x" * 70_000)
    chunked = b"POST /late HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
    for request, rest in ((big, None), (chunked, b"5\r\nhello\r\n0\r\n\r\n")):
        calls = len(app.called_at)
        with _connect(port) as sock:
            head_end = request.index(b"\r\n\r\n") + 4
            sock.sendall(request[:head_end])
            sent_head = time.monotonic()
            time.sleep(0.3)
            sock.sendall(request[head_end:] if rest is None else rest)
            ((status, _, _),) = _responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 413" if rest is None else b"HTTP/1.1 200")
        assert len(app.called_at) == calls + 1
        assert app.called_at[-1] - sent_head < 0.25, request[:60]
    with _connect(port) as sock:  # the head and part of the body, then gone
        sock.sendall(_post("/gone", b"0123456789")[:-5])
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while app.disconnects < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert app.disconnects == 1


def test_a_route_the_app_serves_directly_is_an_exchange(served: Any) -> None:
    """The front hands `direct_route`'s handler its own request (no ASGI messages): one
    JSON response with the app's headers, the connection kept, the body limit a 413."""
    port, app, _ = served
    with _connect(port) as sock:
        sock.sendall(
            _post("/direct", b"hello", b"x-echo: yes\r\n")
            + _post("/direct", b"y" * 2000)
            + _post("/direct", b"again")
        )
        (s1, h1, b1), (s2, _, b2), (s3, _, b3) = _responses(sock, 3)
    assert s1.startswith(b"HTTP/1.1 201") and json.loads(b1) == {"body": "hello", "x-echo": "yes"}
    assert h1[b"content-type"] == b"application/json" and h1[b"x-route"] == b"direct"
    assert int(h1[b"content-length"]) == len(b1) and b"date" in h1
    assert s2.startswith(b"HTTP/1.1 413") and "1000" in json.loads(b2)["error"]["message"]
    assert s3.startswith(b"HTTP/1.1 201") and json.loads(b3)["body"] == "again"
    assert app.exchanges == ["Cycle"] * 3


def test_a_direct_routes_watch_cancels_its_block_when_the_client_leaves(served: Any) -> None:
    port, app, _ = served
    with _connect(port) as sock:
        sock.sendall(_post("/direct", b"{}", b"x-wait: 1\r\n"))
        deadline = time.monotonic() + 5
        while not app.exchanges and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # inside the watched block
    deadline = time.monotonic() + 5
    while not app.watched and time.monotonic() < deadline:
        time.sleep(0.01)
    assert app.watched == [True]
    assert app.exchanges == ["Cycle"]


class _Cycle:
    """What `front.ConnectionWatch` uses of a request."""

    def __init__(self, disconnected: bool = False) -> None:
        self.disconnected = disconnected
        self.watcher: lean.ConnectionWatch | None = None


def test_the_lean_watch_cancels_at_once_and_only_its_block() -> None:
    async def main() -> None:
        # a client gone before the block: its first wait is cancelled
        cycle = _Cycle(disconnected=True)
        started = time.monotonic()
        with lean.ConnectionWatch(cycle) as watch:  # type: ignore[arg-type]
            await asyncio.sleep(10)
        assert watch.gone and time.monotonic() - started < 1 and cycle.watcher is None
        # leaving mid-block: cancelled then, the task goes on afterwards
        cycle = _Cycle()
        loop = asyncio.get_running_loop()
        with lean.ConnectionWatch(cycle) as watch:  # type: ignore[arg-type]
            assert cycle.watcher is watch
            loop.call_later(0.05, watch.client_left)
            await asyncio.sleep(10)
        assert watch.gone
        await asyncio.sleep(0)  # not cancelled any more
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        # a cancel from elsewhere is not swallowed
        cycle = _Cycle()
        with pytest.raises(asyncio.CancelledError), lean.ConnectionWatch(cycle) as watch:  # type: ignore[arg-type]
            loop.call_later(0.05, task.cancel)
            await asyncio.sleep(10)
        assert not watch.gone
        task.uncancel()

    asyncio.run(main())


def test_many_upgrade_requests_in_one_read_are_all_served(served: Any) -> None:
    """Each upgrade request hands the rest of the read on: a loop, not a recursion."""
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /u HTTP/1.1\r\nconnection:upgrade\r\nupgrade:a\r\n\r\n" * 1500)
        answers = _responses(sock, 1500)
    assert all(json.loads(body)["path"] == "/u" for _, _, body in answers)


def test_an_upgrade_request_framed_by_no_length_is_refused(served: Any) -> None:
    """`Transfer-Encoding: gzip` (not ending in chunked) gives no body length: never read
    as chunked, and what follows is never served as a request."""
    port, _, _ = served
    with _connect(port) as sock:
        sock.sendall(b"POST /c HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\n"
                     b"upgrade: websocket\r\ntransfer-encoding: gzip\r\n\r\n"
                     b"0\r\n\r\nGET /after HTTP/1.1\r\nhost: x\r\n\r\n")  # fmt: skip
        sock.settimeout(5)
        data = _read_to_close(sock)
    assert data.startswith(b"HTTP/1.1 ") and b"/after" not in data
    assert data.count(b"HTTP/1.1 ") == 1


@pytest.fixture
def quick() -> Iterator[tuple[int, App]]:
    """A server whose request head and body timeouts are 0.5 s."""
    app = App()
    options = server_options(head_timeout=0.5, body_timeout=0.5)
    server = serve_in_thread(app, **options)
    try:
        yield int(server.url.rsplit(":", 1)[1]), app
    finally:
        app.release.set()
        server.stop()


@pytest.mark.parametrize(
    "stalled",
    [b"GET /x HTTP/1.1\r\nhost", b"POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 9\r\n\r\n{"],
    ids=["head", "body"],
)
def test_a_timeout_is_answered_after_the_response_in_progress(
    quick: tuple[int, App], stalled: bytes
) -> None:
    """A pipelined request stalls behind a slow one: its 408 follows that response, never
    lands before or inside it."""
    port, app = quick
    with _connect(port) as sock:
        sock.sendall(_post("/slow", b"{}") + stalled)
        time.sleep(1.5)  # three timeouts pass while /slow is unanswered
        app.release.set()
        data = _read_to_close(sock)
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    assert b'"path": "/slow"' in data.split(b"\r\n\r\n", 2)[1]
    assert data.index(b"HTTP/1.1 408") > data.index(b'"path": "/slow"')


def test_the_state_tables_allow_only_a_requests_own_order() -> None:
    allowed: dict[ReadState | ResponseState, set[ReadState | ResponseState]] = {
        IDLE: {HEAD, DONE},
        HEAD: {BODY, UPGRADING, DONE},
        BODY: {IDLE, DONE},
        UPGRADING: {BODY, DONE},
        DONE: set(),
        PENDING: {STARTED},
        STARTED: {COMPLETE},
        COMPLETE: set(),
    }
    assert allowed == TRANSITIONS
    state = IDLE
    for new in (HEAD, BODY, IDLE, HEAD, UPGRADING, BODY, IDLE, DONE):
        state = advance(state, new)
    assert state is DONE
    assert advance(advance(PENDING, STARTED), COMPLETE) is COMPLETE
    for machine in (ReadState, ResponseState):
        for current in machine:
            for new in set(machine) - TRANSITIONS[current]:
                name = machine.__name__
                with pytest.raises(ConnStateError, match=f"{name} {current.name} -> {new.name}"):
                    advance(current, new)


def test_a_transition_the_table_refuses_is_an_error_never_a_clients_400() -> None:
    """A front bug surfacing inside a parser callback is raised as such: httptools would
    otherwise report it as a malformed request."""

    async def main() -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            pass

        config = uvicorn.Config(app, log_level="warning", lifespan="off", **server_options())
        config.load()
        protocol = config.http_protocol_class(config, ServerState(), {})
        protocol.connection_made(_NullTransport())
        protocol.read = BODY  # as if a request's body were awaited: a new head cannot begin
        with pytest.raises(ConnStateError, match="BODY -> HEAD"):
            protocol.data_received(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        protocol.connection_lost(None)

    asyncio.run(main())


class _NullTransport(asyncio.Transport):
    def write(self, data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default
