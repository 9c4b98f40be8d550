"""The real command line, as subprocesses: startup validation and a served request."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import openai
import pytest

from sidecar.fake_engine import FakeEngine, RunningServer, Script, serve_in_thread

BIN = Path(sys.executable).parent


def _script(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"console script {name} is not installed"
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(extra: Mapping[bytes, bytes]) -> dict[bytes, bytes]:
    env = {k: v for k, v in os.environb.items() if not k.startswith(b"DYN_")}
    env.update(extra)
    return env


# (environment, extra flags, text that must appear in stderr)
BAD_CONFIGS: list[tuple[dict[bytes, bytes], list[str], str]] = [
    ({b"DYN_PARSER_VERSION": b"v1"}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"v2"}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"enabled"}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"3"}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b" 2 "}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"\xff\xfe"}, [], "DYN_PARSER_VERSION"),
    ({b"DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": b"y"}, [], "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"),
    ({b"DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": b"enabled"}, [],
     "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"),
    ({b"DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": b"true", b"DYN_PARSER_VERSION": b"1"}, [],
     "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"1"}, ["--tool-call-parser", "muse"], "DYN_PARSER_VERSION"),
    ({b"DYN_PARSER_VERSION": b"1"}, ["--reasoning-parser", "deepseek_v41"], "DYN_PARSER_VERSION"),
    ({}, ["--tool-call-parser", "nosuch"], "--tool-call-parser"),
    ({}, ["--reasoning-parser", "nosuch"], "--reasoning-parser"),
    ({}, ["--tool-call-parser", "hermes", "--reasoning-parser", "glm45"], "--reasoning-parser"),
    ({}, ["--chat-template", "/nonexistent/template.jinja"], "/nonexistent/template.jinja"),
]  # fmt: skip


def test_bad_configuration_exits_before_listening() -> None:
    """Every bad configuration: non-zero exit, the variable or flag named, never listening."""
    procs = []
    for i, (env, flags, named) in enumerate(BAD_CONFIGS):
        engine = ("vllm", "sglang", "trtllm")[i % 3]
        port = _free_port()
        cmd = [_script(f"sidecar-{engine}"), "--engine-url", "http://127.0.0.1:9",
               "--model", "m", "--port", str(port), *flags]  # fmt: skip
        procs.append((subprocess.Popen(cmd, env=_env(env), stderr=subprocess.PIPE,
                                       stdout=subprocess.PIPE), named, port))  # fmt: skip
    for proc, named, port in procs:
        out, err = proc.communicate(timeout=60)
        stderr = err.decode("utf-8", "replace")
        assert proc.returncode == 2, (named, stderr)
        assert named in stderr, stderr
        assert "configuration error" in stderr
        assert "Uvicorn running" not in stderr + out.decode()
        with socket.socket() as s:  # nothing is (or was left) listening on the port
            assert s.connect_ex(("127.0.0.1", port)) != 0


def test_check_config_validates_and_exits() -> None:
    ok = subprocess.run(
        [_script("sidecar"), "sglang", "--engine-url", "http://127.0.0.1:9", "--model", "m",
         "--tool-call-parser", "qwen3-coder", "--reasoning-parser", "QWEN3", "--check-config"],
        env=_env({b"DYN_PARSER_VERSION": b"auto"}), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "tool_parser=qwen3_coder" in ok.stdout and "engine=sglang" in ok.stdout
    bad = subprocess.run(
        [_script("sidecar"), "vllm", "--engine-url", "localhost:8000", "--model", "m",
         "--check-config"],
        env=_env({}), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "--engine-url" in bad.stderr


def test_alias_true_selects_v2_with_a_deprecation_warning() -> None:
    run = subprocess.run(
        [_script("sidecar-vllm"), "--engine-url", "http://127.0.0.1:9", "--model", "m",
         "--tool-call-parser", "hermes", "--check-config"],
        env=_env({b"DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": b"TRUE"}),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "parser_version=2" in run.stdout
    assert "DYN_PARSER_VERSION" in run.stderr  # the deprecation warning names the new variable


@pytest.fixture(scope="module")
def fake_vllm() -> Iterator[tuple[FakeEngine, RunningServer]]:
    engine = FakeEngine("vllm", default=Script("Served by the real CLI."))
    server = serve_in_thread(engine.app)
    yield engine, server
    server.stop()


def test_console_script_serves_requests(fake_vllm: tuple[FakeEngine, RunningServer]) -> None:
    engine, server = fake_vllm
    port = _free_port()
    proc = subprocess.Popen(
        [_script("sidecar-vllm"), "--engine-url", server.url, "--model", "served-model",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=_env({}), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/live", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "sidecar did not start"
            time.sleep(0.1)
        assert httpx.get(f"{base}/health").status_code == 200
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="served-model", messages=[{"role": "user", "content": "hi"}]
        )
        assert raw.headers["x-parser-route"] == "pass_through"
        assert raw.parse().choices[0].message.content == "Served by the real CLI."
        assert engine.requests[-1]["model"] == "served-model"
    finally:
        proc.terminate()
        proc.wait(10)
