"""Forced tool choices as structural tags: the decisions made without an engine (the tags
themselves are compiled and matched by the real xgrammar in tests/sidecar/engine)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import parsers
from parsers.errors import ConfigError
from parsers.registry import resolve_tool_parser
from sidecar.app import Sidecar
from sidecar.cli import _parser, configure
from sidecar.errors import APIError
from sidecar.prompt import ChatTemplate
from sidecar.structural import (
    Constraint,
    ForcedChoice,
    TagGrammar,
    forced_constraint,
    reasoning_start,
    strict_auto_tag,
)
from sidecar.toolschema import check_tools, resolve_pointer, standalone

TIME = {
    "type": "object",
    "properties": {"zone": {"type": "string", "enum": ["utc", "cet"]}, "n": {"type": "integer"}},
    "required": ["zone"],
}


def tool(name: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = (tool("get_time", TIME),)


def prompt_for(tool_parser: str, thinking: bool) -> str:
    found = resolve_tool_parser(tool_parser)
    template = ChatTemplate.builtin(found.family.key, found.canonical)
    return template.render([{"role": "user", "content": "hi"}], list(TOOLS), thinking=thinking)


def constraint(
    tool_parser: str, thinking: bool, grammar: str = "0.2.8", mode: str = "structural-tag"
) -> Constraint:
    found = resolve_tool_parser(tool_parser)
    return forced_constraint(
        family=found.family,
        tool_parser=found.canonical,
        tools=TOOLS,
        named=None,
        parallel=True,
        prompt=prompt_for(tool_parser, thinking),
        thinking=thinking,
        choice=ForcedChoice(mode, TagGrammar.parse(grammar, "test")),  # type: ignore[arg-type]
    )


def formats(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every format object in a tag."""
    if isinstance(value, Mapping):
        if "type" in value and value["type"] != "object":
            yield value
        for item in value.values():
            yield from formats(item)
    elif isinstance(value, list):
        for item in value:
            yield from formats(item)


# (tool parser, thinking) -> where the output starts, as the built-in template renders it
STARTS = {
    ("hermes", True): "opener",  # Qwen3's template opens nothing: the model writes <think>
    ("hermes", False): "none",  # <think>\n\n</think> rendered
    ("glm47", True): "open",  # GLM-4.7's template prefills <think>
    ("glm47", False): "none",
    ("deepseek_v4", True): "open",  # the prompt ends with <think>
    ("deepseek_v4", False): "none",
    ("kimi_k2", True): "opener",
    ("kimi_k2", False): "none",
    ("kimi_k3", True): "open",  # <|open|>think<|sep|> prefilled
    ("kimi_k3", False): "none",
    ("gemma4", True): "opener",
    ("gemma4", False): "none",
    ("muse", True): "opener",
    ("muse", False): "none",
}


@pytest.mark.parametrize(("tool_parser", "thinking"), list(STARTS))
def test_the_reasoning_start_comes_from_the_rendered_prompt(
    tool_parser: str, thinking: bool
) -> None:
    family = resolve_tool_parser(tool_parser).family
    prompt = prompt_for(tool_parser, thinking)
    assert reasoning_start(family, prompt, thinking) == STARTS[(tool_parser, thinking)]
    # the prompt decides, not the switch: an opened block is open even with thinking "off"
    if STARTS[(tool_parser, thinking)] == "open":
        assert reasoning_start(family, prompt, False) == "open"


def test_prefix_per_start() -> None:
    opened = constraint("deepseek_v4", True).structural_tag
    assert opened is not None
    first = opened["format"]["elements"][0]
    assert first == {"type": "tag", "begin": "", "content": {"type": "any_text"}, "end": "</think>"}
    opener = constraint("hermes", True).structural_tag
    assert opener is not None
    assert opener["format"]["elements"][:2] == [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "const_string", "value": "\n\n"},
    ]
    off = constraint("hermes", False).structural_tag
    assert off is not None
    assert off["format"]["type"] == "tags_with_separator"  # the calls alone
    assert off["format"]["tags"][0]["begin"] == '<tool_call>\n{"name": "get_time", "arguments": '


K3_CALL = (
    '<|open|>tools<|sep|><|open|>call tool="get_time" index="1"<|sep|>'
    '<|open|>argument key="zone" type="string"<|sep|>utc<|close|>argument<|sep|>'
    '<|open|>argument key="n" type="number"<|sep|>2<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>"
)
# (thinking, what the model writes): reasoning closed, then an empty `response` channel;
# thinking off the prompt ends inside `response`, so it is closed
K3_OUTPUTS = {
    True: "Sure.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>" + K3_CALL,
    False: "<|close|>response<|sep|>" + K3_CALL,
}


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking_on", "thinking_off"])
def test_kimi_k3_calls_follow_the_response_channel(thinking: bool) -> None:
    """Kimi K3 writes its `response` channel (empty when it only calls) before `tools`, and
    the arguments as typed `argument` channels (docs/sidecar.md): the tag asks for that, and
    what it asks for parses as the forced call in both generations, batch and streamed.
    (The xgrammar check of these texts: tests/engine/test_structural_tags.py.)"""
    prompt = prompt_for("kimi_k3", thinking)
    tag = constraint("kimi_k3", thinking).structural_tag
    assert tag is not None
    elements = tag["format"]["elements"]
    if thinking:
        assert prompt.endswith("<|open|>think<|sep|>")
        assert elements[0] == {
            "type": "tag",
            "begin": "",
            "content": {"type": "any_text"},
            "end": "<|close|>think<|sep|>",
        }
        lead = "<|open|>response<|sep|><|close|>response<|sep|>"
    else:
        assert prompt.endswith("<|open|>response<|sep|>")
        lead = "<|close|>response<|sep|>"
    assert elements[-2] == {"type": "const_string", "value": lead}
    section = elements[-1]
    assert (section["begin"], section["end"]) == ("<|open|>tools<|sep|>", "<|close|>tools<|sep|>")
    assert section["content"]["separator"] == ""  # back to back, as the model writes them
    call = section["content"]["tags"][0]
    assert (call["begin"], call["end"]) == (
        '<|open|>call tool="get_time" index="',
        "<|close|>call<|sep|>",
    )
    args = call["content"]["elements"][-1]
    assert args["style"] == "kimi_k3_xml" and args["json_schema"] == TIME
    assert args["excludes"] == ["<|open|>", "<|close|>", "<|sep|>"]
    text = K3_OUTPUTS[thinking]
    assert text.endswith(section["end"]) and lead in text
    for generation in (1, 2):
        kw: dict[str, Any] = {
            "tool_parser": "kimi_k3",
            "reasoning_parser": "kimi_k3",
            "tools": list(TOOLS),
            "tool_choice": "required",
            "generation": generation,
            "thinking": thinking,
            "prompt": prompt,
        }
        for got in (parsers.parse(text, **kw), parsers.stream(list(text), **kw)):
            calls = [(c.name, json.loads(c.arguments)) for c in got.tool_calls]
            assert calls == [("get_time", {"zone": "utc", "n": 2})], (generation, got)
            assert not got.content, (generation, got.content)
            assert (got.reasoning_content or None) == ("Sure." if thinking else None), generation


def test_kimi_k3_guided_json_goes_where_the_answer_goes() -> None:
    """Before xgrammar 0.2.7 (no `kimi_k3_xml` style) the calls are the guided-JSON array,
    written in the `response` channel: nothing closes it first."""
    on = constraint("kimi_k3", True, "0.2.0").structural_tag
    assert on is not None
    first, calls = on["format"]["elements"]
    assert first["end"] == "<|close|>think<|sep|>"
    assert calls["json_schema"]["type"] == "array"
    off = constraint("kimi_k3", False, "0.2.0")
    assert off.structural_tag is None and off.guided_json is not None
    older = constraint("kimi_k3", True, "0.2.7").structural_tag
    assert older is not None and "excludes" not in json.dumps(older)  # a 0.2.8 field


def test_only_the_fields_a_grammar_version_takes() -> None:
    """0.1.25 (vLLM 0.11.x, TensorRT-LLM pinning it): no excludes, no empty separator, no
    styles, no optional, no whitespace bound; 0.2.8: the bound on JSON arguments."""
    for parser in ("hermes", "kimi_k2", "kimi_k3", "muse", "qwen3_coder", "glm47", "deepseek_v4"):
        tag = constraint(parser, True, "0.1.25").structural_tag
        assert tag is not None, parser
        for fmt in formats(tag["format"]):
            assert "excludes" not in fmt and "max_whitespace_cnt" not in fmt, parser
            assert fmt["type"] != "optional" and "style" not in fmt, parser
            assert fmt.get("separator", "x") != "", parser
    new = constraint("hermes", False).structural_tag
    assert new is not None
    assert new["format"]["tags"][0]["content"]["max_whitespace_cnt"] == 4


@pytest.mark.parametrize(
    ("tool_parser", "grammar", "native"),
    [
        ("qwen3_coder", "0.1.25", False),
        ("qwen3_coder", "0.1.32", True),
        ("deepseek_v4", "0.1.31", False),
        ("deepseek_v4", "0.1.32", True),
        ("glm47", "0.1.32", False),
        ("glm47", "0.1.33", True),
        ("gemma4", "0.2.8", False),
        ("kimi_k3", "0.2.0", False),
        ("kimi_k3", "0.2.7", True),
    ],
)
def test_guided_json_behind_the_prefix_where_the_grammar_lacks_the_style(
    tool_parser: str, grammar: str, native: bool
) -> None:
    on = constraint(tool_parser, True, grammar).structural_tag
    assert on is not None  # thinking on: always a tag (the prefix owns reasoning)
    calls = on["format"]["elements"][-1]
    is_array = calls["type"] == "json_schema" and calls["json_schema"].get("type") == "array"
    assert is_array != native, calls
    off = constraint(tool_parser, False, grammar)
    if native:
        assert off.structural_tag is not None and off.guided_json is None
    else:  # nothing before the calls: the engine's plain guided JSON
        assert off.structural_tag is None
        assert off.guided_json is not None and off.guided_json["type"] == "array"


def test_guided_json_mode() -> None:
    got = constraint("hermes", True, mode="guided-json")
    assert got.structural_tag is None
    assert got.guided_json is not None and got.guided_json["minItems"] == 1


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}}, "not local"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, "points at nothing"),
        ({"type": "object", "properties": {"a": {"type": "text"}}}, "not a JSON Schema type"),
        ({"type": "object", "properties": {"a": {"pattern": "(a)\\1"}}}, "back-reference"),
    ],
)
def test_schemas_the_grammar_cannot_express_are_a_400_naming_the_tool(
    params: dict[str, Any], said: str
) -> None:
    tools = (tool("fine", TIME), tool("broken", params))
    with pytest.raises(APIError) as caught:
        check_tools(tools)
    assert caught.value.status == 400
    assert "'broken'" in caught.value.message and said in caught.value.message
    assert caught.value.param == "tools[1].function.parameters"


def test_defs_and_their_references_are_accepted() -> None:
    params = {
        "type": "object",
        "properties": {"u": {"$ref": "#/$defs/U"}, "l": {"type": "array", "items": {"$ref": "#"}}},
        "$defs": {"U": {"enum": [{"$ref": "not a reference: data"}]}},
    }
    check_tools((tool("t", params),))
    # a property on its own still resolves its references (Muse's per-parameter schemas)
    alone = standalone(params["properties"]["u"], params)
    assert resolve_pointer(alone, alone["$ref"]) == params["$defs"]["U"]
    nested = standalone(params["properties"]["l"], params)
    assert resolve_pointer(nested, nested["items"]["$ref"])["properties"] == json.loads(
        json.dumps(nested["$defs"]["root"]["properties"])
    )


def sidecar(*flags: str) -> Sidecar:
    args = _parser("vllm").parse_args(
        ["--engine-url", "http://127.0.0.1:1", "--model", "m", *flags]
    )
    return Sidecar(*configure("vllm", args, {}))


def test_a_request_with_an_inexpressible_schema_is_a_400_before_the_engine() -> None:
    app = sidecar("--tool-call-parser", "hermes", "--reasoning-parser", "qwen3")
    bad = tool("lookup", {"type": "object", "properties": {"q": {"$ref": "#/definitions/Q"}}})
    body = {"messages": [{"role": "user", "content": "x"}], "tools": [bad]}
    for choice in ("required", {"type": "function", "function": {"name": "lookup"}}):
        with pytest.raises(APIError) as caught:
            app.prepare(json.dumps({**body, "tool_choice": choice}).encode())
        assert "'lookup'" in caught.value.message
    # unforced: nothing is constrained, nothing refused
    app.prepare(json.dumps(body).encode())


def test_settings() -> None:
    assert sidecar().config.forced_choice == ForcedChoice()
    legacy = sidecar("--vllm-guided-json").config.forced_choice
    assert legacy.mode == "guided-json"
    old = sidecar("--structural-tag-grammar", "0.1.25").config.forced_choice
    assert old.grammar.version == (0, 1, 25) and old.mode == "structural-tag"
    for bad in ("latest", "0.1.24", "1"):
        with pytest.raises(ConfigError, match="--structural-tag-grammar"):
            sidecar("--structural-tag-grammar", bad)


def auto_tag(tool_parser: str, tools: tuple[dict[str, Any], ...], **kw: Any) -> Any:
    found = resolve_tool_parser(tool_parser)
    return strict_auto_tag(
        family=found.family,
        tool_parser=found.canonical,
        tools=tools,
        parallel=True,
        prompt=prompt_for(tool_parser, False),
        thinking=False,
        choice=kw.get("choice", ForcedChoice()),
    )


def test_auto_is_constrained_only_with_a_strict_tool() -> None:
    strict = {**TOOLS[0], "function": {**TOOLS[0]["function"], "strict": True}}
    loose = tool("free", {"type": "object", "properties": {"q": {"type": "string"}}})
    assert auto_tag("hermes", (TOOLS[0],)) is None  # nothing strict: nothing constrained
    tag = auto_tag("hermes", (strict, loose))
    assert tag is not None
    block = tag["format"]
    assert block["type"] == "triggered_tags" and block["triggers"] == ["<tool_call>"]
    strict_args, loose_args = (t["content"]["json_schema"] for t in block["tags"])
    assert strict_args == TIME and loose_args == {"type": "object"}
    assert "at_least_one" not in block  # free text stays allowed
    assert auto_tag("hermes", (strict,), choice=ForcedChoice("guided-json")) is None
    assert auto_tag("muse", (strict,)) is None  # its tool header starts every message
    assert auto_tag("gemma4", (strict,)) is None
    # XML argument styles take the loose tool's any-object only from xgrammar 0.2.7
    old = ForcedChoice(grammar=TagGrammar((0, 2, 0)))
    assert auto_tag("qwen3_coder", (strict, loose), choice=old) is None
    assert auto_tag("qwen3_coder", (strict,), choice=old) is not None


def test_auto_with_a_strict_tool_through_the_sidecar() -> None:
    app = sidecar("--tool-call-parser", "hermes", "--reasoning-parser", "qwen3")
    strict = {**TOOLS[0], "function": {**TOOLS[0]["function"], "strict": True}}
    body = {"messages": [{"role": "user", "content": "x"}], "tools": [strict]}
    _, plan, request = app.prepare(json.dumps(body).encode())
    assert plan.tool_mode == "auto" and plan.route == "legacy_jail"  # the route is unchanged
    assert request.structural_tag is not None and request.guided_json is None
    # a strict tool the grammar cannot express is refused; a loose one is not looked at
    bad = tool("bad", {"type": "object", "properties": {"q": {"$ref": "#/nope"}}})
    app.prepare(json.dumps({**body, "tools": [strict, bad]}).encode())
    bad_strict = {**bad, "function": {**bad["function"], "strict": True}}
    with pytest.raises(APIError, match="'bad'"):
        app.prepare(json.dumps({**body, "tools": [strict, bad_strict]}).encode())
