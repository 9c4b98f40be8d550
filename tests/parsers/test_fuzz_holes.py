"""Fuzzing reproducers, exactly as found (the classes behind them are
covered by test_fuzz.py's widened soup and test_chunking.py)."""

from __future__ import annotations

import pytest
from parser_check import run

from parsers import stream

KT = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
NAMED = {"type": "function", "function": {"name": "f"}}


def test_qwen3_coder_newline_inside_the_function_tag_at_any_split() -> None:
    t = (
        "<tool_call>\n<function=get_weather\n>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = stream([t[:34], t[34:]], tool_parser="qwen3_coder", generation=2, prompt="x")
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_weather", '{"city":"Paris"}')]
    assert msg.content is None
    run(t, 2, tool_parser="qwen3_coder", prompt="x")  # every character split agrees too


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize("prompt", ["x", None])
def test_kimi_k3_required_keeps_every_character(gen: int, prompt: str | None) -> None:
    kw = {"tool_parser": "kimi_k3", "tool_choice": "required", "tools": KT, "prompt": prompt}
    assert run("{k<", gen, **kw).content == "{k<"
    assert stream(list('{<"'), generation=gen, **kw).content == '{<"'  # type: ignore[arg-type]


@pytest.mark.parametrize("prompt", ["x", None])
def test_kimi_k3_v1_named_choice_keeps_the_brace(prompt: str | None) -> None:
    msg = run("{oops", 1, tool_parser="kimi_k3", tool_choice=NAMED, tools=KT, prompt=prompt)
    assert (msg.content, msg.tool_calls) == ("{oops", [])


@pytest.mark.parametrize("gen", [1, 2])
def test_kimi_k3_call_without_a_tool_name_keeps_its_text(gen: int) -> None:
    for text in ("<|open|>call<|sep|>hello", "<|open|>call<|sep|>hello world<|close|>call<|sep|>"):
        msg = run(text, gen, tool_parser="kimi_k3", reasoning_parser="kimi_k3", prompt="x")
        assert msg.tool_calls == []
        assert "hello" in (msg.content or "")


@pytest.mark.parametrize("gen", [1, 2])
def test_blank_names_are_not_calls(gen: int) -> None:
    hermes = run('<tool_call>{"name": ""}</tool_call>', gen, tool_parser="hermes")
    assert hermes.tool_calls == []
    gemma = run(
        '{"name": "", "arguments": {}}', gen, tool_parser="gemma4", tool_choice="required", tools=KT
    )
    assert gemma.tool_calls == []


def test_muse_blank_name_is_not_a_call() -> None:
    text = (
        ' to=f<|message|><atem:invoke name=""><atem:parameter name="a">1</atem:parameter>'
        "</atem:invoke>"
    )
    assert run(text, 2, tool_parser="muse").tool_calls == []
