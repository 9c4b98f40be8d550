"""A seeded generative probe: >= 10,000 hostile and wrong-typed bodies against a real sidecar.

The bodies are derived from the chat request's schema: valid bodies of several shapes (tools,
history tool calls, structured output, streaming, sampling, thinking controls), then 1-3
mutations each at any path, at any depth: a value of every other JSON type, nesting far past
the limits, lone surrogates, numbers the engines cannot take (huge integers, NaN, 1e999),
deleted required fields, unknown fields, and byte-level damage (truncation, bytes that are
not UTF-8). The sidecar and the fake engine run as their real command lines; the client
reuses keep-alive connections. No body may get a 5xx or hang, and the sidecar must still
serve a valid request afterwards.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.parser_mode_independent(
    reason="request validation happens before any parser route is chosen"
)

BODIES = 10_000
SEED = 20261203
CONNECTIONS = 4
BIN = Path(sys.executable).parent


class Raw:
    """JSON text written as is (values `json.dumps` cannot or would not write)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dump(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: a lone surrogate is written as its \\u escape


TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
        "strict": False,
    },
}
HISTORY = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "call it",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21C"},
]
BASES: list[dict[str, Any]] = [
    {"model": "m", "messages": [{"role": "user", "content": "hello"}]},
    {"model": "m", "messages": HISTORY, "tools": [TOOL], "tool_choice": "auto"},
    {"messages": HISTORY, "tools": [TOOL],
     "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    {"messages": [{"role": "developer", "content": "x"}, {"role": "user", "content": "y"}],
     "response_format": {"type": "json_schema", "json_schema": {
         "name": "r", "schema": {"type": "object"}, "strict": True}}},
    {"messages": [{"role": "user", "content": "s"}], "stream": True,
     "stream_options": {"include_usage": True}, "max_tokens": 20, "temperature": 0.5,
     "top_p": 0.9, "top_k": 5, "min_p": 0.1, "seed": 3, "presence_penalty": 0.1,
     "frequency_penalty": 0.2, "repetition_penalty": 1.1, "stop": ["\n\n"], "n": 1},
    {"messages": [{"role": "user", "content": "t"}], "thinking": {"type": "enabled"},
     "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": True},
     "max_completion_tokens": 9, "logprobs": False, "top_logprobs": 0, "user": "u"},
    {"messages": [{"role": "user", "content": "t"}], "tools": [TOOL], "tool_choice": "required",
     "response_format": {"type": "structural_tag",
                         "format": {"type": "const_string", "value": "x"}}},
]  # fmt: skip
# Fields a base may lack, added by mutations (so every schema field is reached).
OPTIONAL = ["model", "tools", "tool_choice", "stream", "stream_options", "max_tokens",
            "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
            "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "n",
            "logprobs", "top_logprobs", "response_format", "thinking", "reasoning_effort",
            "chat_template_kwargs", "structured_outputs", "structural_tag"]  # fmt: skip


def _deep(levels: int, opener: str) -> Raw:
    closer = "]" if opener == "[" else "}"
    inner = "[" if opener == "[" else '{"a":'
    return Raw(inner * levels + "1" + closer * levels)


def hostile_values(rng: random.Random) -> Any:
    """One value that is wrong or hostile for most fields."""
    pick = rng.randrange(26)
    choices: list[Any] = [
        None, True, False, 0, -1, 7, 1.5, -0.0, "", "text", "auto", [], {}, [1, "a", None],
        {"type": "function"}, Raw("9" * rng.choice((20, 400, 4400, 6000))), Raw("NaN"),
        Raw("-Infinity"), Raw("1e999"), "a\ud800b", "\udfff", "x" * rng.choice((10, 70_000)),
        _deep(rng.choice((70, 300, 3000, 50_000)), rng.choice("[{")),
        {"type": "text", "text": rng.choice([None, 3, ["t"]])},
        [{"role": rng.choice(["user", "robot", 5])}], {"\ud800": 1},
    ]  # fmt: skip
    return choices[pick]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path in a decoded value (the schema the bodies are built from)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from paths(child, (*prefix, i))


def _set(body: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
        if not isinstance(parent, dict | list):
            return body
    if delete and isinstance(parent, dict):
        parent.pop(path[-1], None)
    elif delete and isinstance(parent, list) and parent:
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return body


def generate(rng: random.Random) -> bytes:
    body = json.loads(json.dumps(rng.choice(BASES)))
    for _ in range(rng.randint(1, 3)):
        if not isinstance(body, dict):  # the whole body was replaced
            break
        kind = rng.random()
        if kind < 0.12:
            body[rng.choice([*OPTIONAL, "messages"])] = hostile_values(rng)
        elif kind < 0.2:
            body[f"unknown_{rng.randrange(5)}"] = hostile_values(rng)
        else:
            path = rng.choice(list(paths(body)))
            with contextlib.suppress(KeyError, IndexError, TypeError):
                body = _set(body, path, hostile_values(rng), delete=kind < 0.3)

    raw = dump(body).encode("utf-8")
    damage = rng.random()
    if damage < 0.04 and raw:
        raw = raw[: rng.randrange(len(raw))]
    elif damage < 0.08:
        at = raw.find(b'"', rng.randrange(len(raw)))
        if at > 0:
            bad = rng.choice([b"\xed\xa0\x80", b"\xff", b"\xc3", b"\xf4\x90\x80\x80", b"\x00"])
            raw = raw[: at + 1] + bad + raw[at + 1 :]
    return raw


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("server did not start listening")


def _post(conn: http.client.HTTPConnection, raw: bytes) -> tuple[int, bytes]:
    conn.request("POST", "/v1/chat/completions", raw, {"content-type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


def test_ten_thousand_hostile_bodies_get_no_5xx_and_no_hang() -> None:
    engine_port, sidecar_port = _free_port(), _free_port()
    engine = subprocess.Popen(
        [sys.executable, "-m", "sidecar.fake_engine", "vllm", "--port", str(engine_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sidecar = subprocess.Popen(
        [str(BIN / "sidecar-vllm"), "--engine-url", f"http://127.0.0.1:{engine_port}",
         "--model", "m", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3",
         "--port", str(sidecar_port), "--host", "127.0.0.1", "--log-level", "warning",
         "--engine-timeout", "20"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_listening(engine_port, engine)
        _wait_listening(sidecar_port, sidecar)
        rng = random.Random(SEED)
        bodies = [generate(rng) for _ in range(BODIES)]
        statuses: dict[int, int] = {}
        failures: list[str] = []
        lock = threading.Lock()

        def run(share: list[bytes]) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", sidecar_port, timeout=30)
            for raw in share:
                try:
                    status, reply = _post(conn, raw)
                except (TimeoutError, OSError, http.client.HTTPException) as exc:
                    with lock:
                        failures.append(f"{exc!r} for {raw[:120]!r}")
                    conn.close()
                    continue
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status >= 500:
                        failures.append(f"{status} {reply[:200]!r} for {raw[:200]!r}")
                    elif status >= 400 and "error" not in json.loads(reply):
                        failures.append(f"{status} without the error envelope: {reply[:200]!r}")
            conn.close()

        started = time.monotonic()
        threads = [
            threading.Thread(target=run, args=(bodies[i::CONNECTIONS],)) for i in range(CONNECTIONS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not any(t.is_alive() for t in threads), "a request hung"
        elapsed = time.monotonic() - started
        sent = sum(statuses.values())
        summary = ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))
        print(f"\nhostile bodies sent: {sent} in {elapsed:.1f}s ({summary}); "
              f"5xx: {sum(n for s, n in statuses.items() if s >= 500)}; hangs/errors: "
              f"{len(failures)}")  # fmt: skip
        assert not failures, failures[:5]
        assert sent == BODIES
        assert sum(n for s, n in statuses.items() if 400 <= s < 500) > BODIES // 2
        assert statuses.get(200, 0) > 100  # the mutations left some bodies valid
        conn = http.client.HTTPConnection("127.0.0.1", sidecar_port, timeout=30)
        valid = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
        status, reply = _post(conn, valid)
        conn.close()
        assert status == 200 and json.loads(reply)["choices"][0]["message"]["content"]
    finally:
        sidecar.terminate()
        engine.terminate()
        _, err = sidecar.communicate(timeout=20)
        engine.wait(20)
    assert b"Traceback" not in err, err.decode("utf-8", "replace")[-3000:]
