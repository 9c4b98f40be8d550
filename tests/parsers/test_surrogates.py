"""Lone surrogates in the engine's text are kept, never changed silently (docs/parsers.md,
"Lone surrogates").

A lone UTF-16 surrogate (`\\ud800`) cannot be encoded as UTF-8, but a model's text may hold one
(raw in a library call's text, or as a `\\u` escape inside the JSON a model writes). Each is
kept where the model put it: content and names hold the character, arguments hold JSON that
decodes to it. Before, a lone escape in a JSON key became `""` and one in a name was dropped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from parsers import parse, stream
from parsers.ids import counter_ids

S, LOW = "\ud800", "\udfff"
BAR = "\uff5c"
DS = f"<{BAR}DSML{BAR}"
# (tool parser, output) with a raw lone surrogate in the name, a key and a value
RAW = {
    "hermes": f'<tool_call>{{"name": "f{S}", "arguments": {{"k{S}": "v{LOW}"}}}}</tool_call>',
    "qwen3_coder": (
        f"<tool_call>\n<function=f{S}>\n<parameter=k{S}>\nv{LOW}\n</parameter>\n</function>\n"
        "</tool_call>"
    ),
    "glm47": f"<tool_call>f{S}<arg_key>k{S}</arg_key><arg_value>v{LOW}</arg_value></tool_call>",
    "deepseek_v4": (
        f'{DS}tool_calls>{DS}invoke name="f{S}">{DS}parameter name="k{S}" string="true">v{LOW}'
        f"</{BAR}DSML{BAR}parameter></{BAR}DSML{BAR}invoke></{BAR}DSML{BAR}tool_calls>"
    ),
    "kimi_k2": (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.f{S}:0"
        f'<|tool_call_argument_begin|>{{"k{S}": "v{LOW}"}}<|tool_call_end|>'
        "<|tool_calls_section_end|>"
    ),
    "kimi_k3": (
        f'<|open|>tools<|sep|><|open|>call tool="f{S}" index="1"<|sep|>'
        f'<|open|>argument key="k{S}" type="string"<|sep|>v{LOW}<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    ),
    "muse": (
        f' to=f<|message|><atem:invoke name="f{S}"><atem:parameter name="k{S}">v{LOW}'
        "</atem:parameter></atem:invoke><|eom|>"
    ),
}
# Gemma 4 names are `[A-Za-z0-9_.-]`: the surrogate goes in a key and a value only
GEMMA = f'<|tool_call>call:f{{k{S}:<|"|>v{LOW}<|"|>,b:[<|"|>{S}<|"|>]}}<tool_call|>'


def _cases() -> list[tuple[str, int]]:
    return [(t, g) for t in [*RAW, "gemma4"] for g in ((2,) if t == "muse" else (1, 2))]


def _both(text: str, **kw: Any) -> list[Any]:
    whole = parse(text, id_factory=counter_ids(), **kw)
    for chunks in (list(text), [text[:7], text[7:]]):
        assert stream(chunks, id_factory=counter_ids(), **kw) == whole
    return [whole]


@pytest.mark.parametrize(("tool", "gen"), _cases())
def test_raw_lone_surrogates_in_a_call_are_kept(tool: str, gen: int) -> None:
    text = GEMMA if tool == "gemma4" else RAW[tool]
    (msg,) = _both(text, tool_parser=tool, generation=gen)
    assert msg.content is None and len(msg.tool_calls) == 1
    call = msg.tool_calls[0]
    assert call.name == ("f" if tool == "gemma4" else f"f{S}")
    args = json.loads(call.arguments)
    assert args[f"k{S}"] == f"v{LOW}"


@pytest.mark.parametrize("gen", [1, 2])
def test_lone_surrogate_escapes_in_model_json_are_kept(gen: int) -> None:
    # the model wrote `\ud800` escapes in its JSON: a name, a key, a value, a string-encoded
    # arguments object, and a low half alone
    text = (
        '<tool_call>{"name": "f\\ud800", "arguments": {"\\ud800": "\\udc00x", "y\\udfff": 1}}'
        '</tool_call><tool_call>{"name": "g", "arguments": "{\\"\\ud800\\": 1}"}</tool_call>'
    )
    (msg,) = _both(text, tool_parser="hermes", generation=gen)
    first, second = msg.tool_calls
    assert first.name == f"f{S}"
    assert json.loads(first.arguments) == {S: "\udc00x", f"y{LOW}": 1}
    assert json.loads(second.arguments) == {S: 1}


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize("choice", ["required", "named"])
def test_lone_surrogate_escapes_in_guided_json_are_kept(gen: int, choice: str) -> None:
    tools = [{"type": "function", "function": {"name": f"f{S}", "parameters": {}}}]
    if choice == "required":
        text, tool_choice = '[{"name": "f\\ud800", "arguments": {"\\udfffk": 1}}]', "required"
    else:
        text = '{"\\udfffk": 1}'
        tool_choice = {"type": "function", "function": {"name": f"f{S}"}}  # type: ignore[assignment]
    (msg,) = _both(text, tool_parser="hermes", generation=gen, tools=tools, tool_choice=tool_choice)
    (call,) = msg.tool_calls
    assert call.name == f"f{S}"
    assert json.loads(call.arguments) == {f"{LOW}k": 1}


@pytest.mark.parametrize(("tool", "gen"), _cases())
def test_lone_surrogates_in_prose_and_reasoning_are_kept(tool: str, gen: int) -> None:
    reasoning = {"kimi_k2": "kimi_k25", "hermes": "qwen3", "qwen3_coder": "qwen3", "glm47": "glm45"}
    rp = reasoning.get(tool, tool)
    if tool in ("kimi_k3",):
        text, want = f"<|open|>think<|sep|>r{S}<|close|>think<|sep|>a{LOW}b", (f"a{LOW}b", f"r{S}")
    elif tool == "muse":
        text = f" to=self<|message|>r{S}<|eom|><|start|>assistant to=user<|message|>a{LOW}b<|eot|>"
        want = (f"a{LOW}b", f"r{S}")
    elif tool == "gemma4":
        text, want = f"<|channel>thought\nr{S}<channel|>a{LOW}b", (f"a{LOW}b", f"r{S}")
    else:
        text, want = f"<think>r{S}</think>a{LOW}b", (f"a{LOW}b", f"r{S}")
    kw: dict[str, Any] = {"tool_parser": tool, "reasoning_parser": rp, "generation": gen}
    if tool in ("deepseek_v4", "kimi_k2", "kimi_k3", "gemma4"):
        kw["thinking"] = True
    (msg,) = _both(text, **kw)
    assert (msg.content, msg.reasoning_content) == want
