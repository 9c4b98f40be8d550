"""The floor for one proxied HTTP hop in Python: the least a proxy on asyncio can do.

    python benchmarks/raw_proxy.py ENGINE_PORT PORT ENGINE_PATH ENGINE_BODY_JSON [--work]

Bare asyncio protocols on one kept-alive engine connection: for each request it reads the head
and a Content-Length body, decodes the JSON (a proxy has to read the request), sends the engine
the fixed ENGINE_BODY_JSON on ENGINE_PATH, and returns the engine's body as it came. No HTTP
framework, no validation, no prompt, no parsing, no error handling, non-streamed Content-Length
responses only. `bench_sidecar.py` times it beside the engine and the sidecar, so "added by the
sidecar" can be read against what any Python proxy adds on the same machine in the same run.

With `--work` it also does the sidecar's own work for each request, with the sidecar's own
functions (hermes + qwen3, V1): validate the chat request, render the prompt, decide the
plan, send the engine the body built from it, parse the engine's output and send back the
OpenAI JSON. That is the least a Python sidecar doing this work adds here, whatever its
HTTP server, client and plumbing.

The work includes what any correct HTTP/1.1 proxy does, so `--work` does it too, the least
way: the client's request and the engine's response are parsed by httptools (llhttp, the
parser the sidecar's server and engine client use; the bare floor's `_framed` only finds a
Content-Length body and would misread chunked bodies, pipelined or split requests), each
response gets a unique id and the creation time (`chatcmpl-<random>`, as the OpenAI API
requires), and reads go into one reused buffer (`asyncio.BufferedProtocol`, as the sidecar
reads: a plain `Protocol` allocates 256 KiB per read, which made this floor slower than it
needs to be). Earlier the floor skipped the parsing and the id, so "the same work" was not.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.app import Sidecar


def _framed(buffer: bytes) -> tuple[bytes, bytes] | None:
    """(body, rest) once `buffer` holds a whole message with a Content-Length body."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].lower()
    at = head.find(b"content-length:")
    size = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
    if len(buffer) < end + 4 + size:
        return None
    return buffer[end + 4 : end + 4 + size], buffer[end + 4 + size :]


class _Framed(asyncio.Protocol):
    """A connection that collects what it receives."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport


class _Engine(_Framed):
    def __init__(self) -> None:
        super().__init__()
        self.waiter: asyncio.Future[bytes] | None = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        found = _framed(self.buffer)
        if found is not None and self.waiter is not None:
            body, self.buffer = found
            self.waiter.set_result(body)


class _Client(_Framed):
    def __init__(self, engine: _Engine, request: bytes) -> None:
        super().__init__()
        self.engine, self.request = engine, request

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        found = _framed(self.buffer)
        if found is not None:
            body, self.buffer = found
            asyncio.get_running_loop().create_task(self.answer(body))

    async def answer(self, body: bytes) -> None:
        json.loads(body)
        assert self.engine.transport is not None and self.transport is not None
        self.engine.waiter = asyncio.get_running_loop().create_future()
        self.engine.transport.write(self.request)
        reply = await self.engine.waiter
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(reply)).encode()
            + b"\r\n\r\n"
            + reply
        )


def _post(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


def bench_sidecar() -> Sidecar:
    """The sidecar the benchmarks time, without its server: vLLM, hermes + qwen3, V1 (the
    environment is not read). Imported when called: the bare proxy loads none of the project."""
    from parsers.settings import load_settings
    from sidecar.app import Sidecar
    from sidecar.config import SidecarConfig
    from sidecar.engines import VLLMAdapter
    from sidecar.prompt import ChatTemplate

    settings = load_settings({}, tool_parser="hermes", reasoning_parser="qwen3")
    config = SidecarConfig("vllm", "http://unused", "bench", settings)
    template = ChatTemplate.builtin(settings.family, settings.tool_parser)
    return Sidecar(config, VLLMAdapter(), template)


_BUFFER = memoryview(bytearray(65536))  # one receive buffer for every connection (one thread)


class _ParsedEngine(asyncio.BufferedProtocol):
    """`--work`'s engine connection: each response parsed by httptools."""

    def __init__(self) -> None:
        import httptools

        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[bytes] | None = None
        self._new = httptools.HttpResponseParser
        self._parser: httptools.HttpResponseParser | None = None
        self._body: list[bytes] = []
        self._headers: list[tuple[bytes, bytes]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def request(self, data: bytes) -> asyncio.Future[bytes]:
        assert self.transport is not None
        self.transport.write(data)
        self._parser = self._new(self)
        self._body, self._headers = [], []
        self.waiter = asyncio.get_running_loop().create_future()
        return self.waiter

    def get_buffer(self, sizehint: int) -> memoryview:
        return _BUFFER

    def buffer_updated(self, nbytes: int) -> None:
        assert self._parser is not None
        self._parser.feed_data(_BUFFER[:nbytes])

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        assert self.waiter is not None
        self.waiter.set_result(b"".join(self._body))


class _Working(asyncio.BufferedProtocol):
    """`--work`: the sidecar's own work around the same hop (see the module docstring)."""

    def __init__(self, engine: _ParsedEngine, path: str) -> None:
        import httptools

        self.engine = engine
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._body: list[bytes] = []
        self._headers: list[tuple[bytes, bytes]] = []
        self.path = path
        self.sidecar = bench_sidecar()
        from sidecar.asgi import dumps
        from sidecar.chat import completion
        from sidecar.parsing import parse_whole, parser_for

        self.dumps, self.completion = dumps, completion
        self.parser_for, self.parse_whole = parser_for, parse_whole

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return _BUFFER

    def buffer_updated(self, nbytes: int) -> None:
        self._parser.feed_data(_BUFFER[:nbytes])

    def on_message_begin(self) -> None:
        self._body, self._headers = [], []

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        body = b"".join(self._body)
        asyncio.get_running_loop().create_task(self.answer(body))

    async def answer(self, body: bytes) -> None:
        dumps = self.dumps
        assert self.transport is not None
        request, plan, engine_request = self.sidecar.prepare(body)
        adapter = self.sidecar.engine.adapter
        payload = dumps(adapter.build_body(engine_request))
        waiter = self.engine.request(_post(self.path, payload))
        parser = self.parser_for(plan)  # while the engine works, as the sidecar does
        response_id, created = f"chatcmpl-{os.urandom(16).hex()}", int(time.time())
        event = adapter.decode_response(json.loads(await waiter))
        message = self.parse_whole(plan, event.text, event.finish_reason or "stop", parser)
        model = request.model or "bench"
        reply = dumps(self.completion(response_id, created, model, message, event.usage))
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-parser-route: "
            + plan.route.encode()
            + b"\r\ncontent-length: "
            + str(len(reply)).encode()
            + b"\r\n\r\n"
            + reply
        )


async def serve(engine_port: int, port: int, path: str, body: bytes, work: bool) -> None:
    loop = asyncio.get_running_loop()
    if work:
        _, parsed = await loop.create_connection(_ParsedEngine, "127.0.0.1", engine_port)
        server = await loop.create_server(lambda: _Working(parsed, path), "127.0.0.1", port)
    else:
        _, engine = await loop.create_connection(_Engine, "127.0.0.1", engine_port)
        request = _post(path, body)
        server = await loop.create_server(lambda: _Client(engine, request), "127.0.0.1", port)
    await server.serve_forever()


if __name__ == "__main__":
    engine_port, port, path, body = sys.argv[1:5]
    work = sys.argv[5:] == ["--work"]
    asyncio.run(serve(int(engine_port), int(port), path, body.encode(), work))
