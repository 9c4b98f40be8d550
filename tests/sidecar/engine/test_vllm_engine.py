"""The sidecar in front of a real vLLM, checked with the `openai` client in each parser mode.

The model is random (tests/sidecar/engine/make_tiny_model.py): its free text means nothing, so the
checks compare the sidecar with the engine (same text streamed or not, prompt tokens equal
to vLLM's own count, the engine's metrics) and use bounded schemas (`enum`, `maxLength`,
integer ranges) so that constrained answers finish within `max_tokens`.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import openai
import pytest
from engine_harness import (
    MAX_MODEL_LEN,
    MODEL_NAME,
    PARSER_MODES,
    SIDECAR_ARGS,
    get,
    post_json,
    start_sidecar,
)

from parsers.api import parse_text
from parsers.plan import ParsePlan
from sidecar.app import Sidecar
from sidecar.cli import _parser, configure
from sidecar.engines.base import EngineRequest
from sidecar.engines.vllm import VLLMAdapter

# The route each parser mode serves a Qwen3 Hermes deployment with (docs/parser-selection.md).
ROUTES = {"unset": "legacy_jail", "v1": "legacy_jail", "v2": "parser_v2"}
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 8},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
# What pydantic writes for a model with an enum field: the enum under `$defs`, referenced.
PYDANTIC = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 8, "title": "City"},
        "unit": {"$ref": "#/$defs/Unit"},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
    "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "title": "Unit"}},
}
TIME = {
    "type": "object",
    "properties": {"zone": {"type": "string", "enum": ["utc", "cet"]}},
    "required": ["zone"],
    "additionalProperties": False,
}


def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = [tool("get_weather", WEATHER), tool("get_time", TIME)]
# Thinking off for forced choices: their structural tag otherwise begins with the reasoning
# block, which a random model never ends.
OFF: dict[str, Any] = {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=120)


def chat(url: str, mode: str, **kwargs: Any) -> Any:
    """A non-streamed completion; the route header is the mode's."""
    raw = client(url).chat.completions.with_raw_response.create(
        model=MODEL_NAME, temperature=0, **kwargs
    )
    assert raw.headers["x-parser-route"] == ROUTES[mode]
    return raw.parse()


def streamed(url: str, mode: str, **kwargs: Any) -> dict[str, Any]:
    """A streamed completion assembled: content, reasoning, calls, finish reason, usage."""
    raw = client(url).chat.completions.with_raw_response.create(
        model=MODEL_NAME,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        **kwargs,
    )
    assert raw.headers["x-parser-route"] == ROUTES[mode]
    out: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}, "finish": None}
    for chunk in raw.parse():
        if chunk.usage is not None:
            out["usage"] = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            out["content"] += delta.content or ""
            out["reasoning"] += getattr(delta, "reasoning_content", None) or ""
            for call in delta.tool_calls or []:
                entry = out["calls"].setdefault(call.index, {"name": None, "arguments": ""})
                if call.function and call.function.name:
                    entry["name"] = call.function.name
                if call.function and call.function.arguments:
                    entry["arguments"] += call.function.arguments
            if choice.finish_reason:
                out["finish"] = choice.finish_reason
    return out


def check_weather(arguments: str) -> None:
    args = json.loads(arguments)
    assert set(args) == {"city", "unit", "days"}
    assert isinstance(args["city"], str) and len(args["city"]) <= 8
    assert args["unit"] in ("c", "f")
    assert isinstance(args["days"], int) and 1 <= args["days"] <= 7


def check_call(name: str, arguments: str) -> None:
    if name == "get_weather":
        check_weather(arguments)
    else:
        assert name == "get_time"
        assert json.loads(arguments)["zone"] in ("utc", "cet")


# -- plain text ---------------------------------------------------------------------------


def test_plain_and_streamed_same_text(sidecar: str, mode: str) -> None:
    whole = chat(sidecar, mode, messages=USER, max_tokens=24)
    parts = streamed(sidecar, mode, messages=USER, max_tokens=24)
    text = whole.choices[0].message.content
    assert text, "the model wrote nothing"
    assert parts["content"] == text
    assert parts["finish"] == whole.choices[0].finish_reason


def test_max_tokens_is_length(sidecar: str, mode: str) -> None:
    whole = chat(sidecar, mode, messages=USER, max_tokens=5)
    assert whole.choices[0].finish_reason == "length"
    assert whole.usage.completion_tokens == 5
    parts = streamed(sidecar, mode, messages=USER, max_completion_tokens=5)
    assert parts["finish"] == "length"
    assert parts["usage"].completion_tokens == 5


def rendered_prompt(mode: str, body: dict[str, Any]) -> str:
    """The prompt the sidecar sends for `body`, rendered by the sidecar's own code."""
    return prepared(mode, body)[1].prompt


def prepared(mode: str, body: dict[str, Any]) -> tuple[ParsePlan, EngineRequest]:
    """The plan and engine request the sidecar of `mode` makes of `body` (its own code)."""
    args = _parser("vllm").parse_args(["--engine-url", "http://127.0.0.1:1", *SIDECAR_ARGS])
    value = PARSER_MODES[mode]
    environ = {} if value is None else {"DYN_PARSER_VERSION": value}
    config, adapter, template = configure("vllm", args, environ)
    _, plan, request = Sidecar(config, adapter, template).prepare(json.dumps(body).encode())
    return plan, request


def test_usage_equals_vllm_tokenize(sidecar: str, mode: str, vllm: str) -> None:
    body = {"messages": USER, "tools": TOOLS, "max_tokens": 3}
    status, counted = post_json(
        f"{vllm}/tokenize",
        {"model": MODEL_NAME, "prompt": rendered_prompt(mode, body), "add_special_tokens": False},
    )
    assert status == 200, counted
    whole = chat(sidecar, mode, messages=USER, tools=TOOLS, max_tokens=3)
    assert whole.usage.prompt_tokens == counted["count"]
    parts = streamed(sidecar, mode, messages=USER, tools=TOOLS, max_tokens=3)
    assert parts["usage"].prompt_tokens == counted["count"]
    assert parts["usage"].total_tokens == counted["count"] + 3


def test_stop_string(sidecar: str, mode: str) -> None:
    free = chat(sidecar, mode, messages=USER, max_tokens=24).choices[0].message.content
    stop = free[len(free) // 2 :][:3]
    expected = free[: free.index(stop)]
    whole = chat(sidecar, mode, messages=USER, max_tokens=24, stop=[stop])
    assert whole.choices[0].finish_reason == "stop"
    assert (whole.choices[0].message.content or "") == expected
    parts = streamed(sidecar, mode, messages=USER, max_tokens=24, stop=[stop])
    assert parts["finish"] == "stop"
    assert parts["content"] == expected


# -- tool choices -------------------------------------------------------------------------


def hermes_calls(cities: int) -> dict[str, Any]:
    """A structural tag making the model write `cities` Hermes calls (the city is its own),
    then stop: the text a tool-calling model writes, for the `auto` parsers to find."""
    call = {
        "type": "sequence",
        "elements": [
            {
                "type": "const_string",
                "value": '<tool_call>\n{"name": "get_time", "arguments": {"zone": "',
            },
            {"type": "regex", "pattern": "(utc|cet)"},
            {"type": "const_string", "value": '"}}\n</tool_call>\n'},
        ],
    }
    return {
        "type": "structural_tag",
        "format": {"type": "sequence", "elements": [call] * cities},
    }


def test_tool_choice_auto(sidecar: str, mode: str) -> None:
    # Free text with tools declared: no call invented, the text kept.
    free = chat(sidecar, mode, messages=USER, tools=TOOLS, max_tokens=16)
    assert free.choices[0].message.tool_calls is None
    assert free.choices[0].message.content
    # A model writing Hermes markup: the calls are parsed out of the content.
    whole = chat(
        sidecar,
        mode,
        messages=USER,
        tools=TOOLS,
        tool_choice="auto",
        max_tokens=120,
        response_format=hermes_calls(2),
    )
    calls = whole.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_time", "get_time"]
    for c in calls:
        check_call(c.function.name, c.function.arguments)
    assert whole.choices[0].finish_reason == "tool_calls"
    assert "<tool_call>" not in (whole.choices[0].message.content or "")


def test_tool_choice_required(sidecar: str, mode: str) -> None:
    whole = chat(
        sidecar, mode, messages=USER, tools=TOOLS, tool_choice="required", max_tokens=300, **OFF
    )
    calls = whole.choices[0].message.tool_calls
    assert calls, whole.choices[0]
    complete = calls
    # The array has no bound: a random model may go on adding calls until max_tokens; the
    # call cut off then is passed on as written (V2) or as content (V1), never repaired.
    if whole.choices[0].finish_reason != "tool_calls":
        assert whole.choices[0].finish_reason == "length"
        assert whole.usage.completion_tokens == 300
        complete = calls[:-1]
    for c in complete:
        check_call(c.function.name, c.function.arguments)
    parts = streamed(
        sidecar, mode, messages=USER, tools=TOOLS, tool_choice="required", max_tokens=300, **OFF
    )
    assert [(c["name"], c["arguments"]) for c in parts["calls"].values()] == [
        (c.function.name, c.function.arguments) for c in calls
    ]
    assert parts["finish"] == whole.choices[0].finish_reason


def test_tool_choice_named(sidecar: str, mode: str) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    whole = chat(
        sidecar, mode, messages=USER, tools=TOOLS, tool_choice=named, max_tokens=100, **OFF
    )
    (call,) = whole.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    check_weather(call.function.arguments)
    parts = streamed(
        sidecar, mode, messages=USER, tools=TOOLS, tool_choice=named, max_tokens=100, **OFF
    )
    assert [c["name"] for c in parts["calls"].values()] == ["get_weather"]
    assert json.loads(parts["calls"][0]["arguments"]) == json.loads(call.function.arguments)


def test_parallel_tool_calls_false(sidecar: str, mode: str) -> None:
    # Forced: the engine is asked for one call at most.
    forced: dict[str, Any] = {"tools": TOOLS, "tool_choice": "required", "max_tokens": 300}
    forced |= {"parallel_tool_calls": False, **OFF}
    whole = chat(sidecar, mode, messages=USER, **forced)
    assert len(whole.choices[0].message.tool_calls) == 1
    parts = streamed(sidecar, mode, messages=USER, **forced)
    assert len(parts["calls"]) == 1
    # A model writing two calls under `auto`: the answer carries the first only.
    extra = {"response_format": hermes_calls(2), "max_tokens": 120, "tools": TOOLS}
    both = chat(sidecar, mode, messages=USER, **extra)
    assert len(both.choices[0].message.tool_calls) == 2
    one = chat(sidecar, mode, messages=USER, parallel_tool_calls=False, **extra)
    (call,) = one.choices[0].message.tool_calls
    assert call.function.arguments == both.choices[0].message.tool_calls[0].function.arguments
    parts = streamed(sidecar, mode, messages=USER, parallel_tool_calls=False, **extra)
    assert list(parts["calls"]) == [0]
    assert parts["finish"] == "tool_calls"


def test_defs_ref_schemas(sidecar: str, mode: str) -> None:
    tools = [tool("get_weather", PYDANTIC), tool("get_time", TIME)]
    named = {"type": "function", "function": {"name": "get_weather"}}
    for choice in ("required", named):
        whole = chat(
            sidecar, mode, messages=USER, tools=tools, tool_choice=choice, max_tokens=200, **OFF
        )
        calls = whole.choices[0].message.tool_calls
        assert calls, whole.choices[0]
        for c in calls:
            if c.function.name == "get_weather":
                args = json.loads(c.function.arguments)
                assert args["unit"] in ("celsius", "fahrenheit")
                assert len(args["city"]) <= 8
    fmt = {"type": "json_schema", "json_schema": {"name": "weather", "schema": PYDANTIC}}
    answer = chat(sidecar, mode, messages=USER, response_format=fmt, max_tokens=100)
    value = json.loads(answer.choices[0].message.content)
    assert value["unit"] in ("celsius", "fahrenheit")


@pytest.mark.parametrize("choice", ["required", "named", "parallel_false", "defs"])
def test_forced_choice_is_a_native_tag(mode: str, vllm: str, choice: str) -> None:
    """The structural tag the sidecar builds, sent by its own vLLM adapter to the real vLLM:
    the model writes Hermes calls (the family's own syntax, not a JSON array), which the
    sidecar's parser reads as the forced call(s), valid for their schemas."""
    tools = [tool("get_weather", PYDANTIC if choice == "defs" else WEATHER), tool("get_time", TIME)]
    named = {"type": "function", "function": {"name": "get_weather"}}
    body: dict[str, Any] = {
        "messages": USER,
        "tools": tools,
        "tool_choice": named if choice in ("named", "defs") else "required",
        "parallel_tool_calls": choice != "parallel_false",
        "max_tokens": 200,
        "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    plan, request = prepared(mode, body)
    assert request.guided_json is None
    assert request.structural_tag is not None
    sent = VLLMAdapter().build_body(request)
    assert isinstance(sent["structured_outputs"]["structural_tag"], str)
    status, answer = post_json(f"{vllm}/v1/completions", {**sent, "model": MODEL_NAME})
    assert status == 200, answer
    text = answer["choices"][0]["text"]
    assert text.startswith('<tool_call>\n{"name": "get_'), text
    calls = parse_text(plan, text, answer["choices"][0]["finish_reason"]).tool_calls
    if choice == "required" and answer["choices"][0]["finish_reason"] == "length":
        calls = calls[:-1]  # a random model may add calls up to max_tokens
    assert calls, text
    if choice != "required":
        assert len(calls) == 1
        assert answer["choices"][0]["finish_reason"] == "stop"
    if choice in ("named", "defs"):
        assert calls[0].name == "get_weather"
    for c in calls:
        if choice == "defs" and c.name == "get_weather":
            args = json.loads(c.arguments)
            assert set(args) == {"city", "unit"} and args["unit"] in ("celsius", "fahrenheit")
        else:
            check_call(c.name, c.arguments)


def test_forced_choice_guided_json_fallback(vllm: str, logs: Any) -> None:
    """`--forced-tool-choice guided-json`: the call array, as for engines without tags."""
    process, url = start_sidecar(
        vllm, None, logs, "sidecar-guided-json", extra=("--forced-tool-choice", "guided-json")
    )
    try:
        named = {"type": "function", "function": {"name": "get_weather"}}
        whole = chat(url, "unset", messages=USER, tools=TOOLS, tool_choice=named, max_tokens=100)
        (call,) = whole.choices[0].message.tool_calls
        assert call.function.name == "get_weather"
        check_weather(call.function.arguments)
    finally:
        process.stop()


def test_response_format(sidecar: str, mode: str) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "weather", "schema": WEATHER}}
    whole = chat(sidecar, mode, messages=USER, response_format=fmt, max_tokens=100)
    check_weather(whole.choices[0].message.content)
    assert whole.choices[0].finish_reason == "stop"
    parts = streamed(sidecar, mode, messages=USER, response_format=fmt, max_tokens=100)
    assert parts["content"] == whole.choices[0].message.content


# -- errors, disconnects, endpoints -------------------------------------------------------


def test_engine_4xx_passed_on(sidecar: str, mode: str) -> None:
    too_many = MAX_MODEL_LEN + 1
    with pytest.raises(openai.BadRequestError) as caught:
        chat(sidecar, mode, messages=USER, max_tokens=too_many)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "engine_rejected"
    # vLLM's own words, passed on.
    expected = f"max_tokens={too_many} cannot be greater than max_model_len={MAX_MODEL_LEN}"
    assert expected in error["message"]


def vllm_metrics(vllm: str) -> dict[str, float]:
    status, text = get(f"{vllm}/metrics")
    assert status == 200
    values: dict[str, float] = {}
    for line in text.decode().splitlines():
        m = re.match(r"(vllm:[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if m and m.group(1) in (
            "vllm:num_requests_running",
            "vllm:generation_tokens_total",
            "vllm:request_success_total",
        ):
            values[m.group(1)] = values.get(m.group(1), 0.0) + float(m.group(3))
    return values


def settled_metrics(vllm: str) -> dict[str, float]:
    """vLLM's counters once nothing runs and two reads 0.3 s apart agree (within 60 s)."""
    last = vllm_metrics(vllm)
    for _ in range(200):
        time.sleep(0.3)
        now = vllm_metrics(vllm)
        if now == last and now["vllm:num_requests_running"] == 0:
            return now
        last = now
    raise AssertionError(f"vLLM's metrics do not settle: {last}")


def disconnects(sidecar: str) -> float:
    """The sidecar's count of requests whose client left (499)."""
    # A sidecar relaying a fast engine on a busy machine may answer late, not never.
    status, text = get(f"{sidecar}/metrics", timeout=30)
    assert status == 200
    m = re.search(
        r'^sidecar_requests_total\{engine="vllm",status="499"\} ([0-9.e+]+)$', text.decode(), re.M
    )
    return float(m.group(1)) if m else 0.0


def test_client_disconnect_aborts_generation(sidecar: str, mode: str, vllm: str) -> None:
    """A client leaving mid-stream ends the generation in vLLM: the sidecar counts a 499
    and closes its engine connection, and vLLM aborts the request before `max_tokens` (it
    never finishes as stop/length: vLLM counts neither for an abort). How soon depends on
    the machine: on a loaded 2-core one, vLLM's own server was seen taking ~10 s to notice
    the closed connection while its engine generated on, so the bound is "before the end",
    not a token count."""
    before = settled_metrics(vllm)
    left_before = disconnects(sidecar)
    # Several seconds of generation here (temperature 0: this model writes no end token so
    # soon); the client leaves once the stream has started.
    asked = MAX_MODEL_LEN - 200
    body = {
        "model": MODEL_NAME,
        "messages": USER,
        "max_tokens": asked,
        "temperature": 0,
        "stream": True,
    }
    with (
        httpx.Client(timeout=30) as http,
        http.stream("POST", f"{sidecar}/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert next(response.iter_lines()).startswith("data: ")
    left = time.monotonic()
    while disconnects(sidecar) == left_before and time.monotonic() - left < 30:
        time.sleep(0.05)
    noticed = time.monotonic() - left
    running = vllm_metrics(vllm)["vllm:num_requests_running"]
    after = settled_metrics(vllm)
    generated = after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"]
    story = (
        f"sidecar 499 after {noticed:.2f} s ({disconnects(sidecar) - left_before:.0f}); "
        f"vLLM running then: {running:.0f}; generated {generated:.0f} of {asked}; "
        f"vLLM before {before}, after {after}"
    )
    assert disconnects(sidecar) == left_before + 1, story
    assert after["vllm:request_success_total"] == before["vllm:request_success_total"], story
    assert generated < asked, story


def test_health_models_metrics(sidecar: str, mode: str) -> None:
    status, body = get(f"{sidecar}/health")
    assert status == 200
    health = json.loads(body)
    assert health["status"] == "ok"
    assert "structured_outputs" not in health  # this engine enforces them
    assert [m.id for m in client(sidecar).models.list()] == [MODEL_NAME]

    def counters() -> dict[str, float]:
        status, text = get(f"{sidecar}/metrics")
        assert status == 200
        found = {}
        for name in ("sidecar_prompt_tokens_total", "sidecar_generation_tokens_total"):
            m = re.search(rf'^{name}\{{engine="vllm"\}} ([0-9.e+]+)$', text.decode(), re.M)
            found[name] = float(m.group(1)) if m else 0.0
        m = re.search(
            r'^sidecar_requests_total\{engine="vllm",status="200"\} ([0-9.e+]+)$',
            text.decode(),
            re.M,
        )
        found["ok"] = float(m.group(1)) if m else 0.0
        return found

    before = counters()
    whole = chat(sidecar, mode, messages=USER, max_tokens=4)
    after = counters()
    assert after["ok"] == before["ok"] + 1
    assert (
        after["sidecar_prompt_tokens_total"]
        == before["sidecar_prompt_tokens_total"] + whole.usage.prompt_tokens
    )
    assert after["sidecar_generation_tokens_total"] == before["sidecar_generation_tokens_total"] + 4


# -- the engine's side of the contract ----------------------------------------------------


def test_reasoning_parser_engine_is_named(mode: str, misconfigured_vllm: str, logs: Any) -> None:
    """vLLM with --reasoning-parser ignores the constraint before `</think>`: the sidecar finds
    out and refuses forced choices with a message naming the flag, never a silent 200."""
    process, url = start_sidecar(
        misconfigured_vllm, PARSER_MODES[mode], logs, f"sidecar-reasoning-{mode}"
    )
    try:
        status, body = get(f"{url}/health")
        assert status == 200
        assert "--reasoning-parser" in json.loads(body)["structured_outputs"]
        with pytest.raises(openai.APIStatusError) as caught:
            chat(url, mode, messages=USER, tools=TOOLS, tool_choice="required", max_tokens=50)
        assert caught.value.status_code == 502
        error = caught.value.body
        assert isinstance(error, dict)
        assert error["code"] == "engine_misconfigured"
        assert "--reasoning-parser" in error["message"]
        assert "enable_in_reasoning" in error["message"]
        # Unconstrained requests are served as before.
        assert chat(url, mode, messages=USER, max_tokens=4).choices[0].finish_reason == "length"
    finally:
        process.stop()
