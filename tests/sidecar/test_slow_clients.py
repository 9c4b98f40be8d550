"""Slow and idle clients over real sockets: incomplete request heads and bodies are closed
after their timeouts (a 408 first), silent new connections after the keep-alive timeout,
and the sidecar keeps serving everyone else."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from sidecar_harness import MODEL, Deployment, adapter_for, deploy

from parsers.settings import load_settings
from sidecar.app import build_app
from sidecar.config import SidecarConfig, Timeouts
from sidecar.fake_engine import serve_in_thread
from sidecar.prompt import ChatTemplate
from sidecar.server import server_options

pytestmark = pytest.mark.parser_mode_independent(
    reason="connection handling happens before any request is parsed"
)

HEAD_TIMEOUT, BODY_TIMEOUT, KEEP_ALIVE = 0.6, 1.0, 1.5
BODY = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}).encode()
HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    b"content-length: " + str(len(BODY)).encode() + b"\r\n\r\n"
)


@pytest.fixture(scope="module")
def sidecar() -> Iterator[tuple[str, int]]:
    gen = deploy("vllm")
    deployment: Deployment = next(gen)
    settings = load_settings({})
    config = SidecarConfig("vllm", deployment.engine_server.url, MODEL, settings,
                           timeouts=Timeouts(read=10))  # fmt: skip
    app = build_app(config, adapter_for("vllm"), ChatTemplate.builtin(None, None))
    options = server_options(head_timeout=HEAD_TIMEOUT, body_timeout=BODY_TIMEOUT)
    server = serve_in_thread(app, **{**options, "timeout_keep_alive": KEEP_ALIVE})
    try:
        yield server.url, int(server.url.rsplit(":", 1)[1])
    finally:
        server.stop()
        gen.close()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def _until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and when it closed (monotonic)."""
    received = b""
    while True:
        piece = sock.recv(65536)
        if not piece:
            return received, time.monotonic()
        received += piece


def test_half_sent_heads_are_answered_408_and_closed(sidecar: tuple[str, int]) -> None:
    url, port = sidecar
    socks = [_connect(port) for _ in range(50)]
    started = time.monotonic()
    for sock in socks:
        sock.sendall(HEAD[:30])
    for sock in socks:
        received, closed_at = _until_closed(sock)
        assert received.startswith(b"HTTP/1.1 408 "), received[:80]
        assert b'"code":"request_timeout"' in received
        assert HEAD_TIMEOUT - 0.1 < closed_at - started < HEAD_TIMEOUT + 3
        sock.close()
    assert httpx.post(f"{url}/v1/chat/completions", content=BODY).status_code == 200


def test_each_stage_of_a_kept_alive_connection_gets_its_own_time(
    sidecar: tuple[str, int],
) -> None:
    """One timer serves a connection's stages: after a request whose body came late (its
    body timer left behind), the next request's half-sent head still gets the whole head
    timeout, counted from its own first byte, not from the earlier timer."""
    _, port = sidecar
    sock = _connect(port)
    sock.sendall(HEAD)
    time.sleep(0.2)
    sock.sendall(BODY)
    first = b""
    while b'"object":"chat.completion"' not in first:
        piece = sock.recv(65536)
        assert piece, first
        first += piece
    assert first.startswith(b"HTTP/1.1 200 ")
    time.sleep(0.5)  # the body's timer is due before the next head's deadline
    started = time.monotonic()
    sock.sendall(HEAD[:30])
    received, closed_at = _until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received[:80]
    assert HEAD_TIMEOUT - 0.1 < closed_at - started < HEAD_TIMEOUT + 3
    sock.close()


def test_a_head_trickling_in_is_limited_by_its_total_time(sidecar: tuple[str, int]) -> None:
    _, port = sidecar
    sock = _connect(port)
    started = time.monotonic()
    sock.settimeout(0.1)
    closed = False
    for byte in HEAD:  # one byte every 0.1 s: progress does not extend the head's time
        try:
            sock.sendall(bytes([byte]))
            if sock.recv(65536) == b"":
                closed = True
                break
        except TimeoutError:
            continue
        except OSError:
            closed = True
            break
    assert closed and time.monotonic() - started < HEAD_TIMEOUT + 3
    sock.close()


def test_an_incomplete_body_is_closed_after_the_body_timeout(sidecar: tuple[str, int]) -> None:
    url, port = sidecar
    sock = _connect(port)
    started = time.monotonic()
    sock.sendall(HEAD + BODY[:10])
    received, closed_at = _until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received[:80]
    assert BODY_TIMEOUT - 0.1 < closed_at - started < BODY_TIMEOUT + 3
    sock.close()
    metrics = httpx.get(f"{url}/metrics").text
    assert 'status="499"' in metrics  # the chat handler saw the client go


def test_a_silent_new_connection_is_closed_after_the_keep_alive(sidecar: tuple[str, int]) -> None:
    _, port = sidecar
    sock = _connect(port)
    started = time.monotonic()
    received, closed_at = _until_closed(sock)
    assert received == b"" and KEEP_ALIVE - 0.1 < closed_at - started < KEEP_ALIVE + 3
    sock.close()


def test_a_request_in_pieces_within_the_timeouts_is_served(sidecar: tuple[str, int]) -> None:
    _, port = sidecar
    sock = _connect(port)
    for piece in (HEAD[:20], HEAD[20:], BODY[:5], BODY[5:]):
        sock.sendall(piece)
        time.sleep(0.15)
    reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200 ")
    # kept alive: a second, whole request on the same connection is served too
    sock.sendall(HEAD + BODY)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
    sock.close()
