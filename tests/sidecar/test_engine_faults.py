"""Engine faults through the sidecar, each from a real loopback socket server misbehaving
that way: an endless response head, JSON nested past any stack, text with a lone surrogate,
an engine 429 with Retry-After, one very long SSE line, bodies and lines over the read
limit, token counts that are no counts, a stream ending without a finish reason, a BOM,
and kept-alive connections left unfit for the next request.

The server reads each request and answers the bytes of the fault named in the prompt
(`[[fault:NAME]]`), streamed or not as the request asked; answers without
`connection: close` keep the connection for the next request.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest

from parsers.settings import load_settings
from sidecar.app import build_app
from sidecar.config import SidecarConfig, Timeouts
from sidecar.engines.vllm import VLLMAdapter
from sidecar.fake_engine import serve_in_thread
from sidecar.prompt import ChatTemplate
from sidecar.server import server_options

pytestmark = pytest.mark.parser_mode_independent(
    reason="engine faults are handled before and after parsing, the same on every route"
)

LONG_TEXT = "long line " * 400_000  # one 4 MB SSE line


def _chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}


def _response(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 " + status.encode() + b"\r\ncontent-type: application/json\r\n"
        + b"connection: close\r\n" + extra
        + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )  # fmt: skip


def _sse(*events: bytes, prefix: bytes = b"") -> bytes:
    body = b"".join(b"data: " + e + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    return head + prefix + body


def _kept(body: bytes) -> bytes:
    """A complete keep-alive answer (the connection serves the next request)."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head % len(body) + body


def _chunked_head(content_type: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: " + content_type
        + b"\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )  # fmt: skip


LIMIT = 64 * 2**20  # the engine client's read limit
OVER_LIMIT = 65 * 2**20
# Token counts as JSON text: negative, boolean, 400 digits, fractional, past 32 bits, past
# Python's 4300-digit limit (the engine JSON is still decoded: the count is taken as absent).
BAD_COUNTS = ("-3", "true", "1" + "0" * 400, "1.5", "2147483648", "9" * 5000)


DEEP = b'{"choices":[{"text":' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
SURROGATE = b'{"choices":[{"index":0,"text":"a\\ud800b","finish_reason":"stop"}]}'
GOOD = json.dumps(_chunk("ok ")).encode()


def _reply(fault: str, stream: bool) -> bytes:
    """The bytes of `fault` (every answer closes its connection after it)."""
    if fault == "bighead":
        filler = b"".join(b"x-filler-%d: %s\r\n" % (i, b"f" * 80) for i in range(10_000))
        return b"HTTP/1.1 200 OK\r\n" + filler  # ~900 KB, never ended
    if fault == "deep":
        return _sse(GOOD, DEEP) if stream else _response(DEEP)
    if fault == "surrogate":
        return _sse(GOOD, SURROGATE) if stream else _response(SURROGATE)
    if fault == "busy":
        error = b'{"object":"error","message":"too many requests","code":429}'
        return _response(error, "429 Too Many Requests", b"retry-after: 7\r\n")
    if fault == "hugeerror":  # announces 50 MB, sends 200 KB, then holds the connection
        head = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 50000000\r\n\r\n"
        return head + b'{"message": "' + b"e" * 200_000
    if fault == "long":
        long_event = json.dumps(_chunk(LONG_TEXT)).encode()
        return _sse(long_event, json.dumps(_chunk("", "stop")).encode())
    if fault.startswith("usage"):  # usage0 .. usage5: one of BAD_COUNTS as prompt_tokens
        usage = {"prompt_tokens": "@", "completion_tokens": 2}
        count = BAD_COUNTS[int(fault[5:])].encode()
        if stream:
            usage_chunk = json.dumps({"choices": [], "usage": usage}).encode()
            last = usage_chunk.replace(b'"@"', count)
            return _sse(GOOD, json.dumps(_chunk("", "stop")).encode(), last)
        whole = json.dumps({**_chunk("ok ", "stop"), "usage": usage}).encode()
        return _kept(whole.replace(b'"@"', count))
    if fault == "good":
        return _kept(json.dumps(_chunk("ok ", "stop")).encode())
    if fault == "trailing":  # a complete answer, then the start of a status line
        return _kept(json.dumps(_chunk("ok ", "stop")).encode()) + b"HTTP/1.1 2"
    if fault == "nofinish":  # events, then [DONE], and no finish reason in any
        return _sse(GOOD, GOOD)
    if fault == "notastream":  # a whole JSON answer to a streamed request
        return _response(json.dumps(_chunk("ok ", "stop")).encode())
    if fault == "bom":
        return _sse(GOOD, json.dumps(_chunk("", "stop")).encode(), prefix=b"\xef\xbb\xbf")
    if fault == "bigbody":  # a JSON body that never ends within the limit
        piece = b"%x\r\n%s\r\n" % (2**20, b" " * 2**20)
        return _chunked_head(b"application/json") + b"".join([piece] * (OVER_LIMIT // 2**20))
    if fault == "bigline":  # one event line that never ends within the limit
        piece = b"%x\r\n%s\r\n" % (2**20, b"x" * 2**20)
        first = b"%x\r\n%s\r\n" % (len(b"data: " + GOOD + b"\n\n"), b"data: " + GOOD + b"\n\n")
        data = b"".join([piece] * (OVER_LIMIT // 2**20))
        return _chunked_head(b"text/event-stream") + first + data
    if fault == "bigline-ended":  # one line a byte over the limit, its newline in its last read
        line = b"data: " + b"x" * (LIMIT + 1 - 6) + b"\n\n"
        pieces = [line[i : i + 2**20] for i in range(0, len(line), 2**20)]
        data = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
        return _chunked_head(b"text/event-stream") + data + b"0\r\n\r\n"
    if fault == "bigevent":  # an event of many 1 MiB data lines, never ended
        piece = b"data: " + b"y" * 2**20 + b"\n"
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        return _chunked_head(b"text/event-stream") + chunk * (OVER_LIMIT // 2**20)
    raise AssertionError(fault)


class MisbehavingEngine:
    """A threaded socket server answering each request with its fault's raw bytes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while True:  # one request after another while the answers keep the connection
                while b"\r\n\r\n" not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        return
                    data += piece
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while b"[[fault:" not in body or b"]]" not in body.split(b"[[fault:", 1)[1]:
                    body += conn.recv(65536)
                fault = body.split(b"[[fault:")[1].split(b"]]")[0].decode()
                if fault == "early":
                    # Answers at once without reading the rest of the (large) body, keeping
                    # the connection; it reads nothing more, so what is unsent stays unsent.
                    conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n")
                    time.sleep(20)
                    return
                while len(body) < length:
                    body += conn.recv(65536)
                body, data = body[:length], body[length:]
                request = json.loads(body)
                reply = _reply(fault, bool(request.get("stream")))
                try:
                    conn.sendall(reply)
                    if fault in ("bighead", "hugeerror"):  # hold it until the sidecar closes it
                        conn.settimeout(30)
                        while conn.recv(65536):
                            pass
                except OSError:
                    return
                if b"connection: close" in reply[: reply.index(b"\r\n\r\n")]:
                    return

    def stop(self) -> None:
        self.stopped = True
        self.sock.close()


@pytest.fixture(scope="module")
def sidecar_url() -> Iterator[str]:
    engine = MisbehavingEngine()
    config = SidecarConfig(
        "vllm",
        engine.url,
        "m",
        load_settings({}),
        timeouts=Timeouts(read=30, connect=2),
        max_body_bytes=64 * 2**20,  # room for a request body the engine leaves unread
    )
    app = build_app(config, VLLMAdapter(), ChatTemplate.builtin(None, None))
    server = serve_in_thread(app, **server_options())
    try:
        yield server.url
    finally:
        server.stop()
        engine.stop()


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=60)


def _messages(fault: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"[[fault:{fault}]]"}]


def _stream_until_error(url: str, fault: str) -> tuple[str, openai.APIError]:
    """The text a stream delivered before its in-band error, and the error."""
    text = ""
    with pytest.raises(openai.APIError) as info:
        for chunk in _client(url).chat.completions.create(
            model="m", messages=_messages(fault), stream=True
        ):
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    return text, info.value


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    return call(), time.monotonic() - started


def test_an_over_limit_head_is_a_prompt_502(sidecar_url: str) -> None:
    def call() -> openai.APIStatusError:
        with pytest.raises(openai.APIStatusError) as info:
            _client(sidecar_url).chat.completions.create(model="m", messages=_messages("bighead"))
        return info.value

    error, elapsed = _timed(call)
    assert error.status_code == 502 and elapsed < 5  # the engine timeout is 30 s
    assert isinstance(error.body, dict) and error.body["code"] == "engine_protocol_error"
    assert "head larger than" in error.message or "more than 100 header lines" in error.message


@pytest.mark.parametrize("fault", ["deep", "surrogate"])
def test_malformed_engine_json_is_a_502_protocol_error(sidecar_url: str, fault: str) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        _client(sidecar_url).chat.completions.create(model="m", messages=_messages(fault))
    assert info.value.status_code == 502
    assert isinstance(info.value.body, dict) and info.value.body["code"] == "engine_protocol_error"


@pytest.mark.parametrize("fault", ["deep", "surrogate"])
def test_malformed_engine_json_mid_stream_is_an_in_band_protocol_error(
    sidecar_url: str, fault: str
) -> None:
    text, error = _stream_until_error(sidecar_url, fault)
    assert text == "ok "  # the good event before the bad one arrived
    assert isinstance(error.body, dict)
    assert error.body["code"] == "engine_protocol_error"


def test_an_engine_429_is_a_429_with_its_retry_after(sidecar_url: str) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        _client(sidecar_url).chat.completions.create(model="m", messages=_messages("busy"))
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "7"
    assert "too many requests" in info.value.message
    for stream in (False, True):  # a streamed request fails before its stream starts
        body = {"messages": _messages("busy"), "stream": stream}
        response = httpx.post(f"{sidecar_url}/v1/chat/completions", json=body, timeout=30)
        assert response.status_code == 429 and response.headers["retry-after"] == "7"


def test_one_long_sse_line_arrives_whole(sidecar_url: str) -> None:
    chunks = _client(sidecar_url).chat.completions.create(
        model="m", messages=_messages("long"), stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == LONG_TEXT


def test_a_huge_engine_error_body_is_not_waited_for(sidecar_url: str) -> None:
    def call() -> openai.APIStatusError:
        with pytest.raises(openai.APIStatusError) as info:
            _client(sidecar_url).chat.completions.create(model="m", messages=_messages("hugeerror"))
        return info.value

    error, elapsed = _timed(call)
    assert error.status_code == 502 and elapsed < 5  # the engine timeout is 30 s
    assert isinstance(error.body, dict) and error.body["code"] == "engine_error"


def test_an_engine_body_over_the_read_limit_is_a_502(sidecar_url: str) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        _client(sidecar_url).chat.completions.create(model="m", messages=_messages("bigbody"))
    assert info.value.status_code == 502
    assert isinstance(info.value.body, dict) and info.value.body["code"] == "engine_protocol_error"
    assert "larger than 67108864 bytes" in info.value.message


@pytest.mark.parametrize("fault", ["bigline", "bigline-ended", "bigevent"])
def test_an_event_over_the_read_limit_is_an_in_band_protocol_error(
    sidecar_url: str, fault: str
) -> None:
    text, error = _stream_until_error(sidecar_url, fault)
    assert text == ("ok " if fault == "bigline" else "")
    assert isinstance(error.body, dict)
    assert error.body["code"] == "engine_protocol_error"
    assert "longer than 67108864 bytes" in error.message


@pytest.mark.parametrize("index", range(len(BAD_COUNTS)), ids=[repr(c)[:8] for c in BAD_COUNTS])
def test_token_counts_that_are_no_counts_are_no_usage(sidecar_url: str, index: int) -> None:
    client = _client(sidecar_url)
    before = httpx.get(f"{sidecar_url}/metrics").text
    completion = client.chat.completions.create(model="m", messages=_messages(f"usage{index}"))
    assert completion.choices[0].message.content == "ok "
    assert completion.usage is None
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=_messages(f"usage{index}"),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok "
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.usage is None for c in chunks)
    # The counters did not move, and the kept-alive connection serves the next request.
    assert _token_counts(httpx.get(f"{sidecar_url}/metrics").text) == _token_counts(before)
    again = client.chat.completions.create(model="m", messages=_messages("good"))
    assert again.choices[0].message.content == "ok "


def _token_counts(metrics: str) -> list[str]:
    return [
        line
        for line in metrics.splitlines()
        if line.startswith(("sidecar_prompt_tokens_total", "sidecar_completion_tokens_total"))
    ]


def test_bytes_after_a_response_keep_its_connection_from_the_pool(sidecar_url: str) -> None:
    client = _client(sidecar_url)
    first = client.chat.completions.create(model="m", messages=_messages("trailing"))
    assert first.choices[0].message.content == "ok "
    # Reused, the connection would parse "HTTP/1.1 2" + the next answer: a 502.
    for _ in range(3):
        again = client.chat.completions.create(model="m", messages=_messages("good"))
        assert again.choices[0].message.content == "ok "


@pytest.mark.parametrize("size", [1000, 40 * 2**20], ids=["in-the-socket-buffers", "unsent"])
def test_a_connection_answered_before_its_body_was_read_is_not_reused(
    sidecar_url: str, size: int
) -> None:
    client = _client(sidecar_url)
    big = _messages("early")
    big[0]["content"] += "x" * size  # sent whole (the kernel took it) or partly unsent
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=big)
    assert isinstance(info.value.body, dict) and info.value.body["code"] == "engine_rejected"
    # Reused, the next request would wait behind the unread body until the 30 s timeout.
    again, elapsed = _timed(
        lambda: client.chat.completions.create(model="m", messages=_messages("good"))
    )
    assert again.choices[0].message.content == "ok " and elapsed < 5


def test_a_stream_that_ends_with_no_finish_reason_is_a_protocol_error(sidecar_url: str) -> None:
    text, error = _stream_until_error(sidecar_url, "nofinish")
    assert text == "ok ok "  # delivered, then the failure: as the non-streamed answer's 502
    assert isinstance(error.body, dict)
    assert error.body["code"] == "engine_protocol_error"
    assert "no finish reason" in error.message


def test_a_bom_before_the_first_event_is_dropped(sidecar_url: str) -> None:
    chunks = _client(sidecar_url).chat.completions.create(
        model="m", messages=_messages("bom"), stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok "


def test_a_streamed_request_answered_with_no_stream_says_so(sidecar_url: str) -> None:
    text, error = _stream_until_error(sidecar_url, "notastream")
    assert text == ""
    assert isinstance(error.body, dict) and error.body["code"] == "engine_protocol_error"
    assert "content-type 'application/json', not an event stream" in error.message
