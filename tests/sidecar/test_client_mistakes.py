"""Client mistakes are 400s naming the field, never 500s: decoding, typing, templates.

The bodies below are the classes a hostile-client probe found answered with 500 (deep
nesting, lone surrogates, huge integers, wrong types at depth, templates failing on request
content), each run through the sidecar's own request preparation and over real HTTP.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sidecar_harness import Deployment

from parsers.settings import load_settings
from sidecar.app import Sidecar
from sidecar.cli import main
from sidecar.config import SidecarConfig
from sidecar.engines.vllm import VLLMAdapter
from sidecar.errors import APIError
from sidecar.prompt import SAMPLE_MESSAGES, ChatTemplate, check_template

pytestmark = pytest.mark.parser_mode_independent(
    reason="request validation happens before any parser route is chosen"
)

USER = [{"role": "user", "content": "hi"}]


def _nest(levels: int, leaf: str = "1") -> str:
    return "[" * levels + leaf + "]" * levels


def _history_args(arguments: str) -> bytes:
    """A body whose assistant history call has `arguments` (raw JSON text of the value)."""
    return (
        '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"",'
        '"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":'
        + arguments
        + "}}]}]}"
    ).encode()


def _body(**fields: Any) -> bytes:
    return json.dumps({"messages": USER, **fields}).encode()


# (raw body, the param the 400 names)
MISTAKES: list[tuple[bytes, str | None]] = [
    (b'{"messages":' + _nest(100_000).encode() + b"}", "messages"),
    (b'{"messages":[{"role":"user","content":"a\\ud800b"}]}', "messages[0].content"),
    (b'{"messages":[{"role":"user","content":"a\xed\xa0\x80b"}]}', "messages[0].content"),
    (b'{"messages":[{"role":"user","content":"x"}],"user":"\\udfff"}', "user"),
    (b'{"messages":[{"role":"user","content":"x","\\ud83d":1}]}', "messages[0].\\ud83d"),
    (b'{"messages":[{"role":"user","content":"x"}],"seed":' + b"9" * 5000 + b"}", "seed"),
    (_body(seed=10**30), "seed"),
    (_body(max_tokens=2**40), "max_tokens"),
    (_body(top_k=2**31), "top_k"),
    (b'{"messages":[{"role":"user","content":"x"}],"temperature":NaN}', "temperature"),
    (b'{"messages":[{"role":"user","content":"x"}],"top_p":1e999}', "top_p"),
    (_body(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]),
     "messages[0].content[0].text"),
    (_body(messages=[{"role": "user", "content": [{"type": "text", "text": ["a"]}]}]),
     "messages[0].content[0].text"),
    (_body(messages=[{"role": "assistant", "content": "", "tool_calls": 5}]),
     "messages[0].tool_calls"),
    (_body(messages=[{"role": "assistant", "content": "", "tool_calls": True}]),
     "messages[0].tool_calls"),
    (_body(messages=[{"role": "assistant", "tool_calls": [{"function": {"name": 3}}]}]),
     "messages[0].tool_calls[0].function.name"),
    (_body(messages=[{"role": "tool", "content": "x", "tool_call_id": 7}]),
     "messages[0].tool_call_id"),
    (_history_args(json.dumps('{"a":' + _nest(2000) + "}")),
     "messages[1].tool_calls[0].function.arguments"),
    (_history_args('{"a":' + _nest(200) + "}"), "messages[1].tool_calls[0].function.arguments"),
    (_history_args("[1]"), "messages[1].tool_calls[0].function.arguments"),
    (_body(tools=[{"type": "function", "function": {"name": "f", "parameters": 5}}]),
     "tools[0].function.parameters"),
    (b'{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":'
     b'{"name":"f","parameters":{"default":Infinity}}}]}', "tools[0].function.parameters.default"),
    (_body(tools=[{"type": "function", "function": {"name": "f", "description": []}}]),
     "tools[0].function.description"),
    (_body(stream_options={"include_usage": "yes"}), "stream_options.include_usage"),
    (_body(chat_template_kwargs={"x": json.loads(_nest(100))}), "chat_template_kwargs"),
    (_body(response_format={"type": "json_schema", "json_schema": {"schema": []}}),
     "response_format.json_schema.schema"),
    (_body(tool_choice={"type": "function", "function": "f"}), "tool_choice.function"),
    (_body(stop=["a", 1]), "stop"),
    (_body(model=["m"]), "model"),
    # A lone surrogate inside JSON sent as a string (decoded after the body's own check).
    (_history_args(json.dumps('{"a":"\\ud800"}')), "messages[1].tool_calls[0].function.arguments"),
    (_history_args(json.dumps('{"\\udc00":1}')), "messages[1].tool_calls[0].function.arguments"),
    (_body(structural_tag='{"a":"\\udfff"}'), "structural_tag"),
    (_body(max_completion_tokens=5, max_tokens="abc"), "max_tokens"),
    (_body(max_completion_tokens=5, max_tokens=-5), "max_tokens"),
    (_body(chat_template_kwargs={"enable_thinking": True, "thinking": "bad"}),
     "chat_template_kwargs.thinking"),
    (_body(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": []}}}]), "tools[0].function.parameters.properties"),
    (_body(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "properties": None}}}]), "tools[0].function.parameters.properties"),
    (_body(tools=[{"type": "function", "function": {"name": f"f{i}"}} for i in range(2049)]),
     "tools"),
]  # fmt: skip


def _sidecar(tool: str | None, reasoning: str | None) -> Sidecar:
    settings = load_settings({}, tool_parser=tool, reasoning_parser=reasoning)
    template = ChatTemplate.builtin(settings.family, settings.tool_parser)
    return Sidecar(SidecarConfig("vllm", "http://x", "m", settings), VLLMAdapter(), template)


@pytest.mark.parametrize(("raw", "param"), MISTAKES, ids=range(len(MISTAKES)))
def test_each_mistake_is_a_400_naming_the_field(raw: bytes, param: str | None) -> None:
    for tool, reasoning in (("hermes", "qwen3"), ("gemma4", "gemma4"), (None, None)):
        # The request policy's own mistakes too: one exception, the 400 answered.
        with pytest.raises(APIError) as info:
            _sidecar(tool, reasoning).prepare(raw)
        assert info.value.status == 400
        assert info.value.param == param, info.value.message
        assert param is None or param.split(".")[0].split("[")[0] in info.value.message


def test_the_same_bodies_over_http(deployment: Deployment) -> None:
    url = f"{deployment.sidecar('hermes', 'qwen3')}/v1/chat/completions"
    with httpx.Client(timeout=20) as http:
        for raw, param in MISTAKES:
            response = http.post(url, content=raw, headers={"content-type": "application/json"})
            assert response.status_code == 400, (raw[:80], response.text)
            error = response.json()["error"]
            assert error["param"] == param and error["type"] == "invalid_request_error"
        assert http.post(url, json={"messages": USER}).status_code == 200


def test_nesting_below_the_limit_still_serves_gemma_history() -> None:
    """Gemma 4's template recurses over history arguments: 60 levels still render."""
    raw = _history_args('{"a":' + _nest(60) + "}")
    _, _, engine_request = _sidecar("gemma4", "gemma4").prepare(raw)
    assert "call:f{a:" + "[" * 60 in engine_request.prompt


# -- templates ---------------------------------------------------------------------------

TRAP = (
    "{% for m in messages %}"
    "{% if m['content'] == 'divide' %}{{ 1 / 0 }}{% endif %}"
    "{% if m['content'] == 'range' %}{% for i in range(10**9) %}{% endfor %}{% endif %}"
    "{% if m['content'] == 'recurse' %}"
    "{% macro r(n) %}{{ r(n) }}{% endmacro %}{{ r(1) }}{% endif %}"
    "{% if m['content'] == 'key' %}{{ m['nope']['x'] }}{% endif %}"
    "{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
)  # fmt: skip


@pytest.mark.parametrize("content", ["divide", "range", "recurse", "key"])
def test_template_runtime_errors_caused_by_content_are_400(content: str) -> None:
    template = ChatTemplate(TRAP, "trap.jinja", None)
    check_template(template)  # passes its startup check: the failure is the request's
    with pytest.raises(APIError) as info:
        template.render([{"role": "user", "content": content}], [], thinking=False)
    assert info.value.status == 400 and info.value.param == "messages"
    assert "chat template" in info.value.message


@pytest.mark.parametrize(
    ("tool", "reasoning"),
    [("hermes", "qwen3"), ("qwen3_coder", "qwen3"), ("glm47", "glm45"),
     ("deepseek_v4", "deepseek_v4"), ("deepseek_v41", "deepseek_v41"), ("kimi_k2", "kimi_k25"),
     ("kimi_k3", "kimi_k3"), ("gemma4", "gemma4"), ("muse", "muse"), (None, None)],
)  # fmt: skip
def test_check_config_renders_a_sample_conversation_per_family(
    tool: str | None, reasoning: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", "--check-config"]
    if tool:
        argv += ["--tool-call-parser", tool, "--reasoning-parser", reasoning or ""]
    assert main(argv, environ={}) == 0, capsys.readouterr().err
    assert "configuration ok" in capsys.readouterr().out


def test_a_template_failing_on_the_sample_is_served_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "tools-break.jinja"
    # Renders plain chats but fails on tool calls (`arguments` is an object, not a string).
    bad.write_text(
        "{% for m in messages %}{{ m['content'] }}"
        "{% for c in m['tool_calls'] | default([]) %}{{ c['function']['arguments'] + 'x' }}"
        "{% endfor %}{% endfor %}",
        encoding="utf-8",
    )
    warning = check_template(ChatTemplate.from_file(bad, None))
    assert warning is not None and "sample conversation" in warning
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", "--check-config"]
    assert main([*argv, "--chat-template", str(bad)], environ={}) == 0
    err = capsys.readouterr().err
    assert "sample conversation" in err and str(bad) in err
    plain = ChatTemplate.from_file(bad, None)
    assert plain.render([{"role": "user", "content": "hi"}], None) == "hi"
    with pytest.raises(APIError) as info:  # a request it fails on: a 400 naming the failure
        plain.render(SAMPLE_MESSAGES, None)
    assert info.value.status == 400 and "chat template" in info.value.message


def test_a_template_path_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "template.fifo"
    os.mkfifo(fifo)
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", "--check-config"]
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(main([*argv, "--chat-template", str(fifo)], environ={})),
        daemon=True,
    )
    started = time.monotonic()
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the thread ends, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("--check-config blocked on a FIFO")
    assert result == [2] and time.monotonic() - started < 5
    assert "not a regular file" in capsys.readouterr().err
    assert main([*argv, "--chat-template", str(tmp_path)], environ={}) == 2
    assert "not a regular file" in capsys.readouterr().err
