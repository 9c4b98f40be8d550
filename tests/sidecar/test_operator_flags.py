"""What `vllm serve` operators expect, through the real command line and the real `openai`
client: API keys, served model names, bearer auth to the engine, a private CA for an https
engine, `--enable-auto-tool-choice`, and the process/in-flight/token metrics."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from parsers.settings import load_settings
from sidecar.app import build_app
from sidecar.cli import _parser, configure, main
from sidecar.config import SidecarConfig, Timeouts
from sidecar.engines.vllm import VLLMAdapter
from sidecar.fake_engine import FakeEngine, RunningServer, serve_in_thread
from sidecar.prompt import ChatTemplate
from sidecar.server import server_options

pytestmark = pytest.mark.parser_mode_independent(
    reason="authentication, names and metrics do not depend on the parser route"
)

BIN = Path(sys.executable).parent
USER = [{"role": "user", "content": "hello"}]
KEY, ENGINE_KEY = "sk-sidecar-test", "engine-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, FakeEngine]]:
    """The real CLI with the operator flags, in front of a fake vLLM requiring a key."""
    engine = FakeEngine("vllm", api_key=ENGINE_KEY)
    engine_server = serve_in_thread(engine.app)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYN_", "SIDECAR_"))}
    proc = subprocess.Popen(
        [str(BIN / "sidecar-vllm"), "--engine-url", engine_server.url, "--model", "org/real-model",
         "--served-model-name", "alias-a", "alias-b", "--api-key", KEY,
         "--engine-api-key", ENGINE_KEY, "--enable-auto-tool-choice",
         "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{url}/live").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "sidecar did not start"
            time.sleep(0.05)
        yield url, engine
    finally:
        proc.terminate()
        proc.wait(10)
        engine_server.stop()


def _client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=20)


def test_the_api_key_is_required_on_v1(served: tuple[str, FakeEngine]) -> None:
    url, _ = served
    reply = _client(url, KEY).chat.completions.create(model="alias-a", messages=USER)
    assert reply.choices[0].message.content
    for wrong in ("sk-wrong", KEY + "x", KEY[:-1]):
        with pytest.raises(openai.AuthenticationError) as info:
            _client(url, wrong).chat.completions.create(model="alias-a", messages=USER)
        assert info.value.status_code == 401
        assert isinstance(info.value.body, dict) and info.value.body["code"] == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            _client(url, wrong).models.list()
    response = httpx.post(f"{url}/v1/chat/completions", json={"messages": USER})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    for open_path in ("/live", "/health", "/metrics"):  # probes and scrapes need no key
        assert httpx.get(f"{url}{open_path}").status_code == 200, open_path


def test_served_model_names_in_models_and_responses(served: tuple[str, FakeEngine]) -> None:
    url, engine = served
    client = _client(url, KEY)
    assert [m.id for m in client.models.list().data] == ["alias-a", "alias-b"]
    assert client.chat.completions.create(model="alias-b", messages=USER).model == "alias-b"
    assert client.chat.completions.create(model="unknown", messages=USER).model == "alias-a"
    chunks = list(client.chat.completions.create(model="alias-b", messages=USER, stream=True))
    assert {c.model for c in chunks} == {"alias-b"}
    assert engine.requests[-1]["model"] == "org/real-model"  # the engine's own name


def test_the_engine_gets_a_bearer_token(served: tuple[str, FakeEngine]) -> None:
    url, engine = served
    _client(url, KEY).chat.completions.create(model="alias-a", messages=USER)
    assert engine.authorizations[-1] == f"Bearer {ENGINE_KEY}"


def test_an_engine_refusing_the_credentials_is_a_502() -> None:
    engine = FakeEngine("vllm", api_key=ENGINE_KEY)
    engine_server = serve_in_thread(engine.app)
    config = SidecarConfig("vllm", engine_server.url, "m", load_settings({}),
                           timeouts=Timeouts(read=10), engine_api_key="wrong")  # fmt: skip
    sidecar = serve_in_thread(build_app(config, VLLMAdapter(), ChatTemplate.builtin(None, None)),
                              **server_options())  # fmt: skip
    try:
        with pytest.raises(openai.APIStatusError) as info:
            _client(sidecar.url, "unused").chat.completions.create(model="m", messages=USER)
        assert info.value.status_code == 502
        assert isinstance(info.value.body, dict)
        assert info.value.body["code"] == "engine_unauthorized"
    finally:
        sidecar.stop()
        engine_server.stop()


def test_metrics_have_process_in_flight_and_token_series(served: tuple[str, FakeEngine]) -> None:
    url, _ = served
    client = _client(url, KEY)
    client.chat.completions.create(model="alias-a", messages=USER)
    list(client.chat.completions.create(
        model="alias-a", messages=USER, stream=True, stream_options={"include_usage": True}
    ))  # fmt: skip
    values = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    assert values['sidecar_requests_in_flight{engine="vllm"}'] == 0
    assert values['sidecar_prompt_tokens_total{engine="vllm"}'] >= 2
    assert values['sidecar_generation_tokens_total{engine="vllm"}'] >= 2
    assert values["process_cpu_seconds_total"] > 0
    assert values["process_resident_memory_bytes"] > 1_000_000
    assert values["process_open_fds"] > 0


def test_the_in_flight_gauge_reads_the_count_when_scraped() -> None:
    from sidecar.metrics import Metrics

    metrics = Metrics("vllm")
    metrics.in_flight += 2
    assert b'sidecar_requests_in_flight{engine="vllm"} 2.0' in metrics.render()
    metrics.in_flight -= 2
    assert b'sidecar_requests_in_flight{engine="vllm"} 0.0' in metrics.render()


def test_keys_from_the_environment_and_auto_tool_choice_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m"]
    args = _parser(None).parse_args(argv)
    env = {"SIDECAR_API_KEY": "from-env", "SIDECAR_ENGINE_API_KEY": "engine-env"}
    config, _, _ = configure("vllm", args, env)
    assert config.api_key == "from-env" and config.engine_api_key == "engine-env"
    args = _parser(None).parse_args([*argv, "--api-key", "flag-wins"])
    assert configure("vllm", args, env)[0].api_key == "flag-wins"
    assert main([*argv, "--enable-auto-tool-choice", "--check-config"], environ={}) == 2
    assert "--enable-auto-tool-choice requires --tool-call-parser" in capsys.readouterr().err
    assert main([*argv, "--api-key", "bad\nkey", "--check-config"], environ={}) == 2
    assert "--api-key" in capsys.readouterr().err


# -- a private CA for an https engine -----------------------------------------------------


def _make_ca(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl (Debian's openssl package) is not installed: it makes the test CA")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=tmp)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=sidecar test CA")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")  # fmt: skip
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")  # fmt: skip
    return tmp / "ca.pem", tmp / "server.pem", tmp / "server.key"


def test_a_private_ca_is_trusted_from_the_flag_or_ssl_cert_file(tmp_path: Path) -> None:
    ca, cert, key = _make_ca(tmp_path)
    engine = FakeEngine("vllm")
    tls: RunningServer = serve_in_thread(engine.app, ssl_certfile=str(cert), ssl_keyfile=str(key))
    engine_url = tls.url.replace("http://", "https://")
    servers = []
    try:
        argv = ["vllm", "--engine-url", engine_url, "--model", "m"]
        trusted, _, _ = configure(
            "vllm", _parser(None).parse_args(argv), {"SSL_CERT_FILE": str(ca)}
        )
        assert trusted.engine_ca_bundle == str(ca)
        flagged = _parser(None).parse_args([*argv, "--engine-ca-bundle", str(ca)])
        assert configure("vllm", flagged, {})[0].engine_ca_bundle == str(ca)
        untrusted, _, _ = configure("vllm", _parser(None).parse_args(argv), {})
        for config, status in ((trusted, 200), (untrusted, 503)):
            app = build_app(config, VLLMAdapter(), ChatTemplate.builtin(None, None))
            servers.append(serve_in_thread(app, **server_options()))
            response = httpx.post(f"{servers[-1].url}/v1/chat/completions",
                                  json={"messages": USER}, timeout=20)  # fmt: skip
            assert response.status_code == status, response.text
        assert "CERTIFICATE_VERIFY_FAILED" in response.json()["error"]["message"]
        bad = _parser(None).parse_args([*argv, "--engine-ca-bundle", str(tmp_path / "san.ext")])
        with pytest.raises(Exception, match="CA bundle"):
            configure("vllm", bad, {})
    finally:
        for server in servers:
            server.stop()
        tls.stop()


def test_proxy_variables_are_not_used_and_the_startup_says_so() -> None:
    from sidecar.cli import proxy_warning

    assert proxy_warning({}) is None
    assert proxy_warning({"NO_PROXY": "x"}) is None
    warning = proxy_warning({"HTTPS_PROXY": "http://proxy:3128", "http_proxy": "http://p"})
    assert warning is not None
    assert "HTTPS_PROXY" in warning and "http_proxy" in warning and "directly" in warning
