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

from sidecar.cli import main
from sidecar.config import DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT
from sidecar.fake_engine import FakeEngine, RunningServer, Script, serve_in_thread

BIN = Path(sys.executable).parent
INDEPENDENT = pytest.mark.parser_mode_independent(
    reason="the subprocess environment is set explicitly by the test"
)


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
    ({}, ["--request-head-timeout", "0"], "--request-head-timeout"),
    ({}, ["--request-body-timeout", "inf"], "--request-body-timeout"),
]  # fmt: skip


# One subprocess per kind of startup error (a real process start is slow on a shared
# machine); every configuration above also runs in-process below through the same `main`.
SUBPROCESS_CASES = [0, 5, 6, 8, 9, 11, 13, 14]


@INDEPENDENT
def test_bad_configuration_exits_before_listening() -> None:
    """Bad configurations as real processes: exit 2, the variable or flag named, never listening."""
    procs = []
    for i in SUBPROCESS_CASES:
        env, flags, named = BAD_CONFIGS[i]
        engine = ("vllm", "sglang", "trtllm")[i % 3]
        port = _free_port()
        cmd = [_script(f"sidecar-{engine}"), "--engine-url", "http://127.0.0.1:9",
               "--model", "m", "--port", str(port), *flags]  # fmt: skip
        procs.append((subprocess.Popen(cmd, env=_env(env), stderr=subprocess.PIPE,
                                       stdout=subprocess.PIPE), named, port))  # fmt: skip
    for proc, named, port in procs:
        out, err = proc.communicate(timeout=120)
        stderr = err.decode("utf-8", "replace")
        assert proc.returncode == 2, (named, stderr)
        assert named in stderr, stderr
        assert "configuration error" in stderr
        assert "Uvicorn running" not in stderr + out.decode()
        with socket.socket() as s:  # nothing is (or was left) listening on the port
            assert s.connect_ex(("127.0.0.1", port)) != 0


@INDEPENDENT
@pytest.mark.parametrize(("env", "flags", "named"), BAD_CONFIGS)
def test_bad_configuration_is_refused_by_main(
    env: dict[bytes, bytes],
    flags: list[str],
    named: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server was started despite a bad configuration")

    monkeypatch.setattr("uvicorn.run", no_server)
    # Python decodes a non-UTF-8 environment value with surrogate escapes; so does this.
    environ = {k.decode(): v.decode("utf-8", "surrogateescape") for k, v in env.items()}
    argv = ["trtllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", *flags]
    assert main(argv, environ=environ) == 2
    err = capsys.readouterr().err
    assert named in err and "configuration error" in err


@INDEPENDENT
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


@INDEPENDENT
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


@INDEPENDENT
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


def _start_sidecar(
    engine_url: str, env: Mapping[str, str], *flags: str, stdout: int = subprocess.DEVNULL
) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [_script("sidecar-sglang"), "--engine-url", engine_url, "--model", "m",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *flags],
        env=dict(env), stdout=stdout, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/live", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "sidecar did not start"
        time.sleep(0.1)


# DYN_PARSER_VERSION -> (route for tool_choice auto, route for a forced choice), Qwen3-Coder
MODE_ROUTES = {None: ("parser_v2", "legacy_jail"), "1": ("legacy_jail", "legacy_jail"),
               "2": ("parser_v2", "parser_v2")}  # fmt: skip


@INDEPENDENT
@pytest.mark.parametrize("mode", [None, "1", "2"], ids=["unset", "v1", "v2"])
def test_route_follows_the_environment_the_cli_starts_with(mode: str | None) -> None:
    """The real CLI reads DYN_PARSER_VERSION from its environment at startup."""
    engine = FakeEngine("sglang", default=Script('{"location": "Paris"}'))
    server = serve_in_thread(engine.app)
    env = _env({b"DYN_PARSER_VERSION": mode.encode()} if mode else {})
    proc, base = _start_sidecar(server.url, env, "--tool-call-parser", "qwen3_coder")
    try:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_weather"}}]
        routes = []
        for choice in ("auto", "required"):
            raw = client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "hi"}], tools=tools,
                tool_choice=choice,
            )  # fmt: skip
            routes.append(raw.headers["x-parser-route"])
        assert tuple(routes) == MODE_ROUTES[mode]
    finally:
        proc.terminate()
        proc.wait(10)
        server.stop()


@INDEPENDENT
def test_chat_template_file_is_validated_at_startup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("server started"))
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}{{ m.content }}\n", encoding="utf-8")
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m"]
    assert main([*argv, "--chat-template", str(broken)], environ={}) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "line" in err
    good = tmp_path / "good.jinja"
    good.write_text("{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    assert main([*argv, "--chat-template", str(good), "--check-config"], environ={}) == 0
    assert str(good) in capsys.readouterr().out


@pytest.mark.parametrize(("flag", "expected"), [(None, None), ("on", True), ("off", False)])
def test_default_thinking_flag_reaches_the_settings(
    flag: str | None, expected: bool | None
) -> None:
    from sidecar.cli import _parser, configure

    argv = ["--engine-url", "http://127.0.0.1:9", "--model", "m", "--tool-call-parser", "gemma4"]
    if flag is not None:
        argv += ["--default-thinking", flag]
    config, _, _ = configure("vllm", _parser("vllm").parse_args(argv), {})
    assert config.settings.thinking_default is expected


@INDEPENDENT
@pytest.mark.parametrize(("level", "logged"), [("info", True), ("WARNING", False), ("trace", True)])
def test_access_log_follows_the_log_level(level: str, logged: bool) -> None:
    """uvicorn's access lines (on stdout) are INFO records: written at info and below (trace
    included), not built at all above. The client address is the direct peer: X-Forwarded-For
    is not applied (docs/sidecar.md)."""
    proc, base = _start_sidecar(
        "http://127.0.0.1:9", _env({}), "--log-level", level, stdout=subprocess.PIPE
    )
    try:
        response = httpx.get(f"{base}/v1/models", headers={"x-forwarded-for": "203.0.113.9"})
        assert response.status_code == 200
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    output = out.decode("utf-8", "replace") + err.decode("utf-8", "replace")
    assert "Uvicorn running" in output or level == "WARNING", output
    lines = [line for line in output.splitlines() if '"GET /v1/models HTTP/1.1" 200' in line]
    assert bool(lines) == logged, output
    assert "203.0.113.9" not in output
    assert all("127.0.0.1:" in line for line in lines)


@INDEPENDENT
@pytest.mark.parametrize(
    ("flags", "timeouts"),
    [([], (DEFAULT_HEAD_TIMEOUT, DEFAULT_BODY_TIMEOUT)),
     (["--request-head-timeout", "3", "--request-body-timeout", "7"], (3.0, 7.0))],
)  # fmt: skip
def test_connections_are_served_by_the_sidecars_front_with_its_timeouts(
    flags: list[str], timeouts: tuple[float, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sidecar.front import LeanProtocol

    served: dict[str, object] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: served.update(options))
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", *flags]
    assert main(argv, environ={}) == 0
    protocol = served["http"]
    assert isinstance(protocol, type) and issubclass(protocol, LeanProtocol)
    assert (protocol.head_timeout, protocol.body_timeout) == timeouts
