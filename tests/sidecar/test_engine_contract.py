"""What a real engine showed the sidecar must do (docs/sidecar.md, "The engine's side"):
`parallel_tool_calls: false` answers one call, a tool's `$defs`/`$ref` still resolve inside the
call-array schema, and an engine that does not enforce structured output is named, never a
silent 200. Fake engines on loopback, the real `openai` client; tests/sidecar/engine runs the same
against vLLM itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from sidecar_harness import KINDS, MODEL, Deployment, deploy

from parsers.plan import ParsePlan
from sidecar.enforcement import PROBE_PROMPT, PROBE_VALUE, Enforcement
from sidecar.fake_engine import Script
from sidecar.output_schema import guided_schema, required_schema

pytestmark = pytest.mark.parser_mode_independent(
    reason="each sidecar is configured with an explicit DYN_PARSER_VERSION or none"
)

USER = [{"role": "user", "content": "hello"}]
UNIT = {"type": "string", "enum": ["celsius", "fahrenheit"]}
PYDANTIC = {
    "type": "object",
    "properties": {"unit": {"$ref": "#/$defs/Unit"}, "where": {"$ref": "#/$defs/Place"}},
    "$defs": {
        "Unit": UNIT,
        "Place": {"type": "object", "properties": {"unit": {"$ref": "#/$defs/Unit"}}},
    },
}
OTHER = {"type": "object", "properties": {"u": {"$ref": "#/$defs/Unit"}}, "$defs": {"Unit": {}}}


def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def resolve(root: Any, ref: str) -> Any:
    """A local JSON pointer resolved from the schema's root, as a grammar compiler does."""
    assert ref.startswith("#"), ref
    node = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve at {part!r}"
        node = node[part]
    return node


def refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            yield value["$ref"]
        for key, item in value.items():
            if key not in ("enum", "const"):
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


# -- schemas (pure) ---------------------------------------------------------------------


def test_required_schema_keeps_defs_references_resolvable() -> None:
    """Two tools with a `$defs` entry of the same name: each reference resolves, from the
    call-array schema's root, to its own tool's definition."""
    schema = required_schema((tool("weather", PYDANTIC), tool("other", OTHER)))
    found = list(refs(schema))
    assert len(found) == 6  # the 3 of PYDANTIC, the 1 of OTHER, the 2 parameters entries
    for ref in found:
        resolve(schema, ref)
    weather, other = schema["items"]["anyOf"]
    params = resolve(schema, weather["properties"]["parameters"]["$ref"])
    assert resolve(schema, params["properties"]["unit"]["$ref"]) == UNIT
    place = resolve(schema, params["properties"]["where"]["$ref"])
    assert resolve(schema, place["properties"]["unit"]["$ref"]) == UNIT
    params = resolve(schema, other["properties"]["parameters"]["$ref"])
    assert resolve(schema, params["properties"]["u"]["$ref"]) == {}


def test_required_schema_without_references_is_inline() -> None:
    params = {"type": "object", "properties": {"enum_holder": {"enum": [{"$ref": "#/x"}]}}}
    schema = required_schema((tool("t", params),))
    assert schema["items"]["anyOf"][0]["properties"]["parameters"] == params
    assert "$defs" not in schema


def test_parallel_tool_calls_false_bounds_the_array() -> None:
    tools = (tool("t", {"type": "object"}),)
    assert "maxItems" not in required_schema(tools)
    assert required_schema(tools, parallel=False)["maxItems"] == 1
    plan = ParsePlan("legacy_jail", "qwen3", "hermes", "qwen3", tool_mode="required", tools=tools)
    assert guided_schema(plan, None, parallel=False)["maxItems"] == 1


def test_enforcement_state() -> None:
    state = Enforcement()
    assert state.due(0.0)
    state.record(1.0, "vllm", None)  # the probe failed: nothing learnt, asked again later
    assert state.state == "inconclusive" and state.message is None
    assert not state.due(2.0) and state.due(31.0)
    state.record(31.0, "vllm", "free text")
    assert state.state == "not_enforced"
    assert "--reasoning-parser" in (state.message or "")
    state.record(62.0, "vllm", json.dumps(PROBE_VALUE))
    assert state.state == "enforced" and state.message is None
    assert not state.due(1e9)


# -- over HTTP, fake engines ------------------------------------------------------------


@pytest.fixture(scope="module", params=KINDS)
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    yield from deploy(request.param)


@pytest.fixture(scope="module", params=KINDS)
def ignoring(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """An engine that does not apply guided decoding (vLLM gating it behind
    --reasoning-parser, SGLang with no grammar backend, trtllm-serve without one)."""
    yield from deploy(request.param, enforces_guided=False)


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=20)


TWO_CALLS = (
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "utc"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "cet"}}\n</tool_call>'
)
TOOLS = [tool("get_time", {"type": "object", "properties": {"zone": {"type": "string"}}})]


@pytest.mark.parametrize("version", ["1", "2"])
def test_parallel_tool_calls_false_answers_one_call(deployment: Deployment, version: str) -> None:
    url = deployment.sidecar("hermes", "qwen3", environ={"DYN_PARSER_VERSION": version})
    deployment.engine.scripts["two"] = Script(TWO_CALLS)
    messages = [{"role": "user", "content": "[[script:two]] time?"}]
    c = client(url)
    both = c.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert [json.loads(t.function.arguments) for t in both.choices[0].message.tool_calls] == [
        {"zone": "utc"},
        {"zone": "cet"},
    ]
    one = c.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, parallel_tool_calls=False
    )
    (call,) = one.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"zone": "utc"}
    assert one.choices[0].finish_reason == "tool_calls"
    chunks = c.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, parallel_tool_calls=False, stream=True
    )
    indexes, arguments, finish = set(), "", None
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                indexes.add(delta.index)
                arguments += (delta.function and delta.function.arguments) or ""
            finish = choice.finish_reason or finish
    assert indexes == {0}
    assert json.loads(arguments) == {"zone": "utc"}
    assert finish == "tool_calls"


def test_parallel_tool_calls_must_be_a_boolean(deployment: Deployment) -> None:
    url = deployment.sidecar("hermes", "qwen3")
    with pytest.raises(openai.BadRequestError) as info:
        client(url).chat.completions.create(
            model=MODEL, messages=USER, extra_body={"parallel_tool_calls": "no"}
        )
    body = info.value.body
    assert isinstance(body, dict) and body["param"] == "parallel_tool_calls"


def probes(d: Deployment) -> int:
    key = "text" if d.kind == "sglang" else "prompt"
    return sum(1 for body in d.engine.requests if body.get(key) == PROBE_PROMPT)


def test_enforcing_engine_is_probed_once(deployment: Deployment) -> None:
    url = deployment.sidecar("hermes", "qwen3", environ={"DYN_PARSER_VERSION": "1"})
    before = probes(deployment)
    named = {"type": "function", "function": {"name": "get_time"}}
    for _ in range(3):
        reply = client(url).chat.completions.create(
            model=MODEL, messages=USER, tools=TOOLS, tool_choice=named
        )
        assert reply.choices[0].finish_reason in ("tool_calls", "stop")
    health = httpx.get(f"{url}/health").json()
    assert health == {"status": "ok", "engine": deployment.kind}
    assert probes(deployment) - before <= 1  # none when an earlier sidecar's check ran here


def test_engine_ignoring_constraints_is_named(ignoring: Deployment) -> None:
    url = ignoring.sidecar("hermes", "qwen3", environ={"DYN_PARSER_VERSION": "1"})
    health = httpx.get(f"{url}/health")
    assert health.status_code == 200
    assert "does not enforce structured output" in health.json()["structured_outputs"]
    cases: list[dict[str, Any]] = [
        {"tools": TOOLS, "tool_choice": "required"},
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
        {"response_format": {"type": "json_object"}},
    ]
    flag = {"vllm": "--reasoning-parser", "sglang": "--grammar-backend", "trtllm": "xgrammar"}
    for extra in cases:
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as info:
                client(url).chat.completions.create(
                    model=MODEL, messages=USER, stream=stream, **extra
                )
            assert info.value.status_code == 502
            body = info.value.body
            assert isinstance(body, dict) and body["code"] == "engine_misconfigured"
            assert flag[ignoring.kind] in body["message"]
    # Unconstrained requests are served as before.
    reply = client(url).chat.completions.create(model=MODEL, messages=USER, tools=TOOLS)
    assert reply.choices[0].message.content
