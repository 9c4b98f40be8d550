"""The engine HTTP client (`sidecar.http1`) against real loopback servers speaking raw bytes.

Each test runs a scripted asyncio TCP server: per accepted connection, a handler reads
requests and writes exactly the bytes under test (framing, keep-alive, closes, garbage).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sidecar import http1, recvbuf

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class Server:
    """A loopback TCP server; `handler(reader, writer, connection_number)` per connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed_by_client = asyncio.Event()

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self.connections)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        """One request (head + content-length body); None when the client closed."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.closed_by_client.set()
            return None
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        request = head + await reader.readexactly(length)
        self.requests.append(request)
        return request


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def client(url: str, read_timeout: float = 5.0) -> http1.Client:
    return http1.Client(url, connect_timeout=2.0, read_timeout=read_timeout)


OK = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"


def answer_each(*responses: bytes) -> Callable[[Server], Handler]:
    """A handler answering the n-th request on a connection with responses[n]."""

    def make(server: Server) -> Handler:
        async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
            for response in responses:
                if await server.read_request(r) is None:
                    return
                w.write(response)
                await w.drain()
            await server.read_request(r)  # hold the connection until the client closes

        return handler

    return make


async def with_server(make: Callable[[Server], Handler], body: Any) -> Any:
    server = Server(lambda r, w, n: asyncio.sleep(0))
    server.handler = make(server)
    async with server:
        return await body(server)


def test_request_bytes_and_content_length_body() -> None:
    async def body(server: Server) -> tuple[int, bytes, str | None]:
        c = client(server.url + "/base/")
        response = await c.request("POST", "/v1/x", b'{"a":1}', [("content-type", "json")])
        data = await response.read()
        await response.aclose()
        await c.aclose()
        return response.status, data, response.head.get("content-length")

    make = answer_each(OK)
    status, data, length = run(with_server(make, body))
    assert (status, data, length) == (200, b"hello", "5")


def test_user_and_password_in_the_url_are_sent_as_basic_auth() -> None:
    async def body(server: Server) -> bytes:
        host = server.url.removeprefix("http://")
        c = client(f"http://al%40ice:p%3Ass@{host}/base")
        response = await c.request("GET", "/health")
        await response.read()
        await response.aclose()
        await c.aclose()
        return server.requests[0]

    request = run(with_server(answer_each(OK), body))
    # base64 of "al@ice:p:ss" (percent-escapes decoded, as httpx did)
    assert b"\r\nauthorization: Basic YWxAaWNlOnA6c3M=\r\n" in request
    assert request.startswith(b"GET /base/health HTTP/1.1\r\n")


def test_request_is_written_whole() -> None:
    async def body(server: Server) -> bytes:
        c = client(server.url + "/base")
        response = await c.request("POST", "/v1/x", b'{"a":1}', [("content-type", "json")])
        await response.read()
        await c.aclose()
        return server.requests[0]

    request = run(with_server(answer_each(OK), body))
    head, _, payload = request.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /base/v1/x HTTP/1.1"  # the URL's path prefixes every request
    assert b"content-length: 7" in lines and b"content-type: json" in lines
    assert any(line.startswith(b"host: 127.0.0.1:") for line in lines)
    assert payload == b'{"a":1}'


def test_chunked_body_with_extensions_and_trailers_arrives_in_pieces() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while await server.read_request(r) is not None:
            w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel")
            await w.drain()
            await asyncio.sleep(0.05)
            w.write(b"lo\r\n1A\r\n" + b"z" * 26 + b"\r\n0\r\nx-trailer: 1\r\n\r\n")
            await w.drain()

    async def body() -> tuple[list[bytes], int]:
        c = client(server.url)
        response = await c.request("GET", "/")
        pieces = [piece async for piece in response.aiter_bytes()]
        await response.aclose()
        again = await c.request("GET", "/")  # the connection went back to the pool
        assert await again.read() == b"hello" + b"z" * 26
        await c.aclose()
        return pieces, server.connections

    server = Server(handler)

    async def main() -> tuple[list[bytes], int]:
        async with server:
            return await body()

    pieces, connections = run(main())
    assert b"".join(pieces) == b"hello" + b"z" * 26
    assert pieces[0] == b"hel"  # delivered as it arrived, before the rest was sent
    assert connections == 1


def test_large_bodies_read_at_once_on_several_connections_stay_apart() -> None:
    """Bodies many receive buffers long (`sidecar.recvbuf`, one per thread, shared by all
    connections), sent in pieces to two responses read concurrently: each arrives whole
    and unmixed, content-length and chunked alike."""
    size = 5 * recvbuf.SIZE + 123

    def payload(n: int) -> bytes:
        return bytes(range(256)) * (size // 256) + bytes([n]) * (size % 256)

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while await server.read_request(r) is not None:
            data = payload(n)
            if n % 2:
                w.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(data))
                pieces = [data[i : i + 40000] for i in range(0, len(data), 40000)]
            else:
                w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                pieces = [b"%x\r\n%s\r\n" % (len(c), c) for c in (data[:70000], data[70000:])]
                pieces.append(b"0\r\n\r\n")
            for piece in pieces:
                w.write(piece)
                await w.drain()
                await asyncio.sleep(0.001)

    server = Server(handler)

    async def main() -> list[tuple[int, bytes]]:
        async with server:
            c = client(server.url)

            async def get(i: int) -> tuple[int, bytes]:
                response = await c.request("GET", f"/{i}")
                data = await response.read()
                await response.aclose()
                return i, data

            results = await asyncio.gather(get(1), get(2))
            await c.aclose()
            return list(results)

    bodies = {data for _, data in run(main())}
    assert bodies == {payload(1), payload(2)}


def test_close_delimited_body_is_read_to_the_end_and_not_reused() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\npart one, ")
        await w.drain()
        await asyncio.sleep(0.05)
        w.write(b"part two")
        await w.drain()

    server = Server(handler)

    async def main() -> tuple[bytes, bytes, int]:
        async with server:
            c = client(server.url)
            first = await c.request("GET", "/")
            data = await first.read()
            second = await c.request("GET", "/")
            data2 = await second.read()
            await c.aclose()
            return data, data2, server.connections

    data, data2, connections = run(main())
    assert data == data2 == b"part one, part two"
    assert connections == 2


def test_keep_alive_connection_is_reused_and_connection_close_is_not() -> None:
    closing = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"

    async def main() -> tuple[int, int]:
        async with Server(lambda r, w, n: asyncio.sleep(0)) as server:
            server.handler = answer_each(OK, OK, OK)(server)
            c = client(server.url)
            for _ in range(3):
                response = await c.request("GET", "/")
                assert await response.read() == b"hello"
                await response.aclose()
            reused = server.connections
            await c.aclose()
        async with Server(lambda r, w, n: asyncio.sleep(0)) as server:
            server.handler = answer_each(closing, closing)(server)
            c = client(server.url)
            for _ in range(2):
                response = await c.request("GET", "/")
                assert await response.read() == b"ok"
            await c.aclose()
            return reused, server.connections

    assert run(main()) == (1, 2)


def test_responses_on_one_connection_parse_apart_around_a_head_request() -> None:
    """A kept-alive connection parses each response apart (its parser goes on to the next
    one): chunked then Content-Length bodies, then a HEAD answer whose Content-Length
    announces no body; that connection is not kept, the next requests go on a new one."""
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n"  # HEAD: no body follows
    methods = ["GET", "GET", "HEAD", "GET", "GET"]

    async def main() -> tuple[list[bytes], int]:
        async with Server(lambda r, w, n: asyncio.sleep(0)) as server:
            server.handler = answer_each(chunked, OK, head, OK, chunked)(server)
            c = client(server.url)
            bodies = []
            for method in methods:
                response = await c.request(method, "/")
                bodies.append(await response.read())
                await response.aclose()
            await c.aclose()
            return bodies, server.connections

    bodies, connections = run(main())
    assert bodies == [b"abc", b"hello", b"", b"abc", b"hello"]
    assert connections == 2  # a HEAD answer's connection is not kept (its body is unknown)


def test_stale_pooled_connection_is_retried_once_on_a_new_connection() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        if n == 1:  # answers one request, then drops the connection when the next arrives
            await server.read_request(r)
            w.write(OK)
            await w.drain()
            await server.read_request(r)
            return
        while await server.read_request(r) is not None:
            w.write(OK)
            await w.drain()

    server = Server(handler)

    async def main() -> tuple[bytes, int, int]:
        async with server:
            c = client(server.url)
            first = await c.request("POST", "/", b"1")
            await first.read()
            second = await c.request("POST", "/", b"2")
            data = await second.read()
            await c.aclose()
            return data, server.connections, len(server.requests)

    data, connections, requests = run(main())
    assert data == b"hello"
    assert connections == 2 and requests == 3  # sent on the stale one, then once more


def test_meanwhile_runs_once_after_the_request_is_written_before_the_answer() -> None:
    """Also when the request goes out twice (a stale pooled connection, then a new one)."""
    events: list[str] = []

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        if n == 1:  # answers once, then drops the connection when the next request arrives
            await server.read_request(r)
            w.write(OK)
            await server.read_request(r)
            return
        while await server.read_request(r) is not None:
            events.append("server got the request")
            await asyncio.sleep(0.05)
            events.append("server answers")
            w.write(OK)

    server = Server(handler)

    async def main() -> bytes:
        async with server:
            c = client(server.url)
            await (await c.request("POST", "/", b"1")).read()
            response = await c.request(
                "POST", "/", b"2", meanwhile=lambda: events.append("meanwhile")
            )
            data = await response.read()
            await c.aclose()
            return data

    assert run(main()) == b"hello"
    assert events == ["meanwhile", "server got the request", "server answers"]


def test_a_new_connection_closed_before_answering_is_not_retried() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)  # then close without a response

    server = Server(handler)

    async def main() -> tuple[type[BaseException], int]:
        async with server:
            c = client(server.url)
            with pytest.raises(http1.RemoteClosed) as info:
                await c.request("POST", "/", b"x")
            await c.aclose()
            return info.type, server.connections

    assert run(main()) == (http1.RemoteClosed, 1)


def test_read_timeouts_on_head_and_on_body() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        if n == 2:
            w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
            await w.drain()
        await asyncio.sleep(30)

    server = Server(handler)

    async def main() -> tuple[str, bytes, str, bool]:
        async with server:
            c = client(server.url, read_timeout=0.2)
            with pytest.raises(http1.ReadTimeout) as head_timeout:
                await c.request("GET", "/")
            response = await c.request("GET", "/")
            pieces = response.aiter_bytes()
            first = await anext(pieces)
            with pytest.raises(http1.ReadTimeout) as body_timeout:
                await anext(pieces)
            await response.aclose()
            await c.aclose()
            return str(head_timeout.value), first, str(body_timeout.value), not c._idle

    head, first, body, pool_empty = run(main())
    assert "0.2s" in head and "0.2s" in body
    assert first == b"abc"
    assert pool_empty  # a response cut short never goes back to the pool


@pytest.mark.parametrize("whole", [False, True])
def test_a_whole_read_wakes_once_the_response_is_complete(whole: bool) -> None:
    """`whole=True` (a non-streamed engine call) returns once the whole response arrived,
    not at its head; bytes arriving restart the read timeout, so a body trickling in over
    more than the timeout is read; a body past the high-water mark is read whole too."""
    big = b"x" * (3 * http1._HIGH_WATER)

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n")
        # 2.4 s in all, 0.3 s apart: longer than the 2 s read timeout, each gap far below it
        # (room for a loaded machine)
        for piece in (b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"):
            await w.drain()
            await asyncio.sleep(0.3)
            w.write(piece)
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%b" % (len(big), big))
        await w.drain()
        await server.read_request(r)

    server = Server(handler)

    async def main() -> tuple[float, bytes, bytes]:
        async with server:
            c = client(server.url, read_timeout=2.0)
            loop = asyncio.get_running_loop()
            started = loop.time()
            response = await c.request("GET", "/", whole=whole)
            returned = loop.time() - started
            body = await response.read()
            await response.aclose()
            response = await c.request("GET", "/big", whole=whole)
            large = await response.read()
            await response.aclose()
            await c.aclose()
            return returned, body, large

    returned, body, large = run(main())
    assert body == b"abcdefgh" and large == big
    if whole:
        assert returned >= 2.35  # after the last piece
    else:
        assert returned < 0.3  # at the head, before the first piece


@pytest.mark.parametrize(("first", "second"), [(30.0, 0.3), (0.3, 0.6)])
def test_each_read_on_a_reused_connection_times_out_by_its_own_timeout(
    first: float, second: float
) -> None:
    """One deadline timer serves a connection's reads: a read with a shorter timeout than
    the one before is not held to the earlier, later deadline, and one with a longer
    timeout is not cut short by the timer the earlier read left behind."""

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)  # one quick answer, then silence
        w.write(OK)
        await w.drain()
        await server.read_request(r)
        await asyncio.sleep(30)

    server = Server(handler)

    async def main() -> tuple[float, int]:
        async with server:
            c = client(server.url, read_timeout=first)
            response = await c.request("GET", "/")
            assert await response.read() == b"hello"
            await response.aclose()
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(http1.ReadTimeout):
                await c.request("GET", "/", timeout=second)
            waited = loop.time() - started
            await c.aclose()
            return waited, server.connections

    waited, connections = run(main())
    assert connections == 1  # the second request reused the first one's connection
    assert second - 0.01 <= waited < second + 0.25


@pytest.mark.parametrize(
    "reply",
    [
        b"garbage\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: five\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab",
    ],
)
def test_malformed_responses_are_protocol_errors(reply: bytes) -> None:
    async def main(server: Server) -> None:
        c = client(server.url)
        with pytest.raises(http1.ProtocolError):
            await c.request("GET", "/")
        await c.aclose()

    run(with_server(answer_each(reply), main))


@pytest.mark.parametrize("newline", [b"\r\n", b"\n"])
def test_a_head_arriving_byte_by_byte_after_an_interim_response(newline: bytes) -> None:
    """Response heads are found however the bytes are split (the blank line too), with
    CRLF or bare LF line ends; the body bytes after the head are the body's."""
    interim = b"HTTP/1.1 100 Continue" + newline + newline
    final = newline.join([b"HTTP/1.1 201 Created", b"x-a: 1", b"content-length: 5", b"", b""])

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while await server.read_request(r) is not None:
            for byte in interim + final + b"hello":
                w.write(bytes([byte]))
                await w.drain()
                await asyncio.sleep(0)

    server = Server(handler)

    async def main() -> tuple[int, str | None, bytes]:
        async with server:
            c = client(server.url)
            response = await c.request("GET", "/")
            data = await response.read()
            await c.aclose()
            return response.status, response.head.get("x-a"), data

    assert run(main()) == (201, "1", b"hello")


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nx-long: " + b"a" * 70000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"x-many: 1\r\n" * 101 + b"\r\n",
    ],
    ids=["long line", "many headers"],
)
def test_oversized_heads_are_protocol_errors(reply: bytes) -> None:
    async def main(server: Server) -> str:
        c = client(server.url)
        with pytest.raises(http1.ProtocolError) as caught:
            await c.request("GET", "/")
        await c.aclose()
        return str(caught.value)

    message = run(with_server(answer_each(reply), main))
    assert "larger than 65536 bytes" in message or "more than 100 header lines" in message


def test_a_head_under_the_limit_read_with_a_large_body_is_accepted() -> None:
    """More than the head limit arrives before the head is complete (a 60 KB head with the
    body's start), but the head itself is under the limit: accepted, whole body read."""
    head = b"HTTP/1.1 200 OK\r\nx-long: " + b"a" * 60_000 + b"\r\ncontent-length: 100000\r\n\r\n"
    body = b"b" * 100_000

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while await server.read_request(r) is not None:
            w.write(head[:10])  # the head's start alone, then the rest with the body
            await w.drain()
            await asyncio.sleep(0.05)
            w.write(head[10:] + body)
            await w.drain()

    server = Server(handler)

    async def main() -> tuple[int, int, int]:
        async with server:
            c = client(server.url)
            response = await c.request("GET", "/")
            data = await response.read()
            await c.aclose()
            return response.status, len(response.head.get("x-long") or ""), len(data)

    assert run(main()) == (200, 60_000, 100_000)


def test_an_endless_head_is_refused_at_once_not_at_the_timeout() -> None:
    """~900 KB of header lines with no end: refused once past the limit, long before the
    read timeout (the engine keeps the connection open)."""
    filler = b"".join(b"x-filler-%d: %s\r\n" % (i, b"f" * 80) for i in range(10_000))
    reply = b"HTTP/1.1 200 OK\r\n" + filler

    async def main(server: Server) -> tuple[str, float]:
        c = client(server.url, read_timeout=30)
        started = asyncio.get_running_loop().time()
        with pytest.raises(http1.ProtocolError) as caught:
            await c.request("GET", "/")
        elapsed = asyncio.get_running_loop().time() - started
        await c.aclose()
        return str(caught.value), elapsed

    message, elapsed = run(with_server(answer_each(reply), main))
    assert "larger than 65536" in message or "more than 100 header lines" in message
    assert elapsed < 5


def test_bad_chunk_framing_is_a_protocol_error() -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
    ]

    async def main(server: Server) -> None:
        c = client(server.url)
        for _ in replies:
            # Raised by `request` when the bad framing arrived with the head, else by `read`.
            with pytest.raises(http1.ProtocolError):
                response = await c.request("GET", "/")
                try:
                    await response.read()
                finally:
                    await response.aclose()
        await c.aclose()

    async def handler_main() -> None:
        server = Server(lambda r, w, n: asyncio.sleep(0))
        server.handler = lambda r, w, n: answer_each(replies[n - 1])(server)(r, w, n)
        async with server:
            await main(server)

    run(handler_main())


def test_connection_closed_inside_the_body() -> None:
    async def main(server: Server) -> str:
        c = client(server.url)
        response = await c.request("GET", "/")
        with pytest.raises(http1.RemoteClosed) as info:
            await response.read()
        await c.aclose()
        return str(info.value)

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")

    server = Server(handler)

    async def outer() -> str:
        async with server:
            return await main(server)

    assert "closed inside the body" in run(outer())


def test_interim_responses_are_skipped_and_empty_bodies_done() -> None:
    reply = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
    )  # fmt: skip

    async def main(server: Server) -> tuple[int, bytes, int]:
        c = client(server.url)
        response = await c.request("POST", "/", b"x")
        data = await response.read()
        again = await c.request("POST", "/", b"y")  # 204 has no body: connection reusable
        await again.aclose()
        await c.aclose()
        return response.status, data, server.connections

    assert run(with_server(answer_each(reply, reply), main)) == (204, b"", 1)


def test_closing_an_unread_response_closes_its_connection() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await w.drain()
        await server.read_request(r)  # sees EOF when the client gives up

    server = Server(handler)

    async def main() -> tuple[bool, int]:
        async with server:
            c = client(server.url)
            response = await c.request("GET", "/")
            assert await anext(response.aiter_bytes()) == b"abc"
            await response.aclose()
            await asyncio.wait_for(server.closed_by_client.wait(), 5)
            second = await c.request("GET", "/")  # a new connection, not the abandoned one
            await second.aclose()
            await c.aclose()
            return server.closed_by_client.is_set(), server.connections

    assert run(main()) == (True, 2)


def test_cancelled_read_leaves_nothing_in_the_pool() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab")
        await w.drain()
        await server.read_request(r)

    server = Server(handler)

    async def main() -> tuple[bool, bool]:
        async with server:
            c = client(server.url)
            response = await c.request("GET", "/")

            async def consume() -> None:
                try:
                    await response.read()
                finally:
                    await response.aclose()

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(server.closed_by_client.wait(), 5)
            await c.aclose()
            return server.closed_by_client.is_set(), not c._idle

    assert run(main()) == (True, True)


def test_connect_errors() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused

        async def main() -> str:
            c = client(f"http://127.0.0.1:{port}")
            with pytest.raises(http1.ConnectError) as info:
                await c.request("GET", "/")
            return str(info.value)

        assert f"127.0.0.1:{port}" in run(main())


def test_expired_idle_connections_are_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main(server: Server) -> int:
        c = client(server.url)
        first = await c.request("GET", "/")
        await first.read()
        monkeypatch.setattr(http1, "KEEPALIVE_EXPIRY", 0.0)
        second = await c.request("GET", "/")
        await second.read()
        await c.aclose()
        return server.connections

    assert run(with_server(answer_each(OK, OK), main)) == 2


def test_pure_helpers() -> None:
    head = http1.Head(200, "OK", (("transfer-encoding", "gzip, chunked"),))
    assert not http1.close_delimited(head)
    assert http1.close_delimited(http1.Head(200, "OK", (("transfer-encoding", "gzip"),)))
    assert http1.close_delimited(http1.Head(200, "OK", ()))
    assert not http1.close_delimited(http1.Head(204, "No Content", ()))
    assert not http1.close_delimited(http1.Head(200, "OK", (("content-length", "3"),)))
    # headers as received are decoded on first use: names lowercased, values trimmed
    raw = http1.Head(429, "Too Many Requests", raw=[(b"Retry-After", b" 7 "), (b"X-A", b"\xe9")])
    assert raw.get("retry-after") == "7" and raw.get("x-a") == "\xe9"
    assert raw.headers == (("retry-after", "7"), ("x-a", "\xe9"))
    assert http1.Origin.from_url("https://[::1]/p/").host_header == "[::1]"
    assert http1.Origin.from_url("http://h:8000/p/") == http1.Origin("http", "h", 8000, "/p")
    with pytest.raises(ValueError):
        http1.Origin.from_url("ftp://h")


CHUNKED = b"5;x=1\r\nhello\r\n1A\r\n" + b"z" * 26 + b"\r\n0\r\nx-trailer: 1\r\n\r\n"


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(CHUNKED)])
def test_a_chunked_body_however_the_bytes_are_split(size: int) -> None:
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while await server.read_request(r) is not None:
            reply = head + CHUNKED
            for at in range(0, len(reply), size):
                w.write(reply[at : at + size])
                await w.drain()
                await asyncio.sleep(0)

    server = Server(handler)

    async def main() -> tuple[bytes, bytes, int]:
        async with server:
            c = client(server.url)
            first = await (await c.request("GET", "/")).read()
            second = await (await c.request("GET", "/")).read()  # the connection is reused
            await c.aclose()
            return first, second, server.connections

    assert run(main()) == (b"hello" + b"z" * 26, b"hello" + b"z" * 26, 1)


def test_bytes_after_a_chunked_body_make_the_connection_unusable() -> None:
    reply = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\njunk"

    async def main(server: Server) -> tuple[bytes, int]:
        c = client(server.url)
        first = await c.request("GET", "/")
        data = await first.read()
        second = await c.request("GET", "/")  # not on the connection with junk on it
        await second.read()
        await c.aclose()
        return data, server.connections

    assert run(with_server(answer_each(reply, reply), main)) == (b"ok", 2)
