"""Smoke tests of the three images: start, /live, a tool call through the sidecar, non-root.

A fake engine of the image's kind runs on the host, on Docker's bridge gateway address, speaking
that engine's real wire format; the container reaches it there, and the test reaches the
container through a port published on 127.0.0.1. The client is the real `openai` package.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from images_support import bridge_gateway, published_port, wait_health, wait_live

from buildtool.images.daemon import Daemon
from buildtool.images.targets import SIDECARS, image_tag
from sidecar.fake_engine import FakeEngine, RunningServer, Script, serve_in_thread

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MODEL = "fake-model"
TOOL_OUTPUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]


@dataclass
class Running:
    kind: str
    url: str
    container: Any
    engine: FakeEngine
    server: RunningServer


def pick(running: dict[str, Running], kind: str) -> Running:
    """The running image of `kind`; skipped when this run builds other sidecars only (CI)."""
    if kind not in running:
        pytest.skip(f"sidecar-{kind} is not among SIDECAR_FORGE_IMAGE_TARGETS in this run")
    return running[kind]


@pytest.fixture(scope="module")
def running(daemon: Daemon, sidecar_images: dict[str, str]) -> Iterator[dict[str, Running]]:
    """All three images started at once, each in front of its own fake engine on the host."""
    gateway = bridge_gateway(daemon)
    started: dict[str, Running] = {}
    try:
        for kind in (t.removeprefix("sidecar-") for t in sidecar_images):
            fake = FakeEngine(kind, default=Script(TOOL_OUTPUT))
            server = serve_in_thread(fake.app, host=gateway)
            container = daemon.sdk.containers.run(
                image_tag(f"sidecar-{kind}"),
                ["--engine-url", server.url, "--model", MODEL, "--tool-call-parser", "hermes"],
                detach=True,
                ports={"8080/tcp": ("127.0.0.1", None)},
                labels={"sidecar-forge.test": "smoke"},
            )
            url = f"http://127.0.0.1:{published_port(container)}"
            started[kind] = Running(kind, url, container, fake, server)
        yield started
    finally:
        for item in started.values():
            item.container.remove(force=True)
            item.server.stop()


@pytest.mark.parametrize("kind", SIDECARS)
def test_live_answers(running: dict[str, Running], kind: str) -> None:
    item = pick(running, kind)
    assert wait_live(item.url, item.container).json() == {"status": "alive"}


@pytest.mark.parametrize("kind", SIDECARS)
def test_chat_through_the_image_returns_a_parsed_tool_call(
    running: dict[str, Running], kind: str
) -> None:
    item = pick(running, kind)
    wait_live(item.url, item.container)
    client = openai.OpenAI(base_url=f"{item.url}/v1", api_key="unused", max_retries=0, timeout=30)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS
    )
    completion = raw.parse()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    function = calls[0].function  # type: ignore[union-attr]
    assert function.name == "get_weather"
    assert json.loads(function.arguments) == {"city": "Paris"}
    assert raw.headers.get("x-parser-route")
    # the request really went through the container to this host's fake engine
    assert item.engine.requests, "the fake engine saw no request"

    stream = client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS, stream=True
    )
    arguments = ""
    names = []
    for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            if call.function and call.function.name:
                names.append(call.function.name)
            if call.function and call.function.arguments:
                arguments += call.function.arguments
    assert names == ["get_weather"] and json.loads(arguments) == {"city": "Paris"}


@pytest.mark.parametrize("kind", SIDECARS)
def test_runs_as_non_root_and_reports_healthy(running: dict[str, Running], kind: str) -> None:
    item = pick(running, kind)
    wait_live(item.url, item.container)
    code, out = item.container.exec_run(["id", "-un"])
    assert code == 0 and out.decode().strip() == "sidecar", out
    code, out = item.container.exec_run(["id", "-u"])
    assert code == 0 and out.decode().strip() == "10001", out
    config = item.container.image.attrs["Config"]
    assert config["User"] == "10001:10001"
    assert "8080/tcp" in config["ExposedPorts"]
    assert config["Entrypoint"][0] == f"sidecar-{kind}"
    assert wait_health(item.container) == "healthy"


def test_metrics_count_the_smoke_requests(running: dict[str, Running]) -> None:
    item = next(iter(running.values()))
    wait_live(item.url, item.container)
    client = openai.OpenAI(base_url=f"{item.url}/v1", api_key="unused", max_retries=0, timeout=30)
    client.chat.completions.create(model=MODEL, messages=MESSAGES)
    text = httpx.get(f"{item.url}/metrics", timeout=5).text
    assert f'sidecar_requests_total{{engine="{item.kind}",status="200"}}' in text


def test_bad_configuration_exits_before_listening(
    daemon: Daemon, sidecar_images: dict[str, str]
) -> None:
    """Settings are validated at startup inside the image too: the variable is named."""
    container = daemon.sdk.containers.run(
        next(iter(sidecar_images.values())),
        ["--engine-url", "http://127.0.0.1:9", "--model", MODEL, "--tool-call-parser", "hermes"],
        environment={"DYN_PARSER_VERSION": "7"},
        detach=True,
    )
    try:
        result = container.wait(timeout=60)
        logs = container.logs(stdout=True, stderr=True).decode()
    finally:
        container.remove(force=True)
    assert result["StatusCode"] != 0
    assert "DYN_PARSER_VERSION" in logs and "Uvicorn running" not in logs
