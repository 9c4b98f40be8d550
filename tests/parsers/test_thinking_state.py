"""Thinking state: explicit reasoning markers are parsed whatever `thinking` says,
the start state comes from the prompt or the family's template default, output channels
follow the configured parsers, and a reasoning-only deployment ends reasoning at the family's
tool-call opener."""

from __future__ import annotations

import pytest
from parser_check import run

GENS = pytest.mark.parametrize("gen", [1, 2])


@GENS
def test_qwen3_thinking_on_bare_end_marker_ends_reasoning(gen: int) -> None:
    # a known reproducer: a thinking checkpoint whose template prefilled `<think>`
    for kw in (
        {"thinking": True},
        {"request": {"chat_template_kwargs": {"enable_thinking": True}}},
    ):
        msg = run("Let me think</think>This is the rest", gen, reasoning_parser="qwen3", **kw)
        assert (msg.reasoning_content, msg.content) == ("Let me think", "This is the rest")
        # a hybrid checkpoint writes its own opener: markup at the start
        msg = run("<think>hm</think>ok", gen, reasoning_parser="qwen3", **kw)
        assert (msg.reasoning_content, msg.content) == ("hm", "ok")


@GENS
def test_qwen3_default_template_opens_nothing(gen: int) -> None:
    msg = run("plain answer", gen, reasoning_parser="qwen3", tool_parser="hermes")
    assert (msg.reasoning_content, msg.content) == (None, "plain answer")


@GENS
@pytest.mark.parametrize("thinking", [None, False, True])
def test_gemma4_thought_channel_parsed_whatever_thinking_says(gen: int, thinking: object) -> None:
    text = "<|channel>thought\nhmm<channel|>answer"
    msg = run(text, gen, tool_parser="gemma4", reasoning_parser="gemma4", thinking=thinking)
    assert (msg.reasoning_content, msg.content) == ("hmm", "answer")


@GENS
@pytest.mark.parametrize(
    ("parser", "text", "reasoning", "content"),
    [
        ("qwen3", "<think>a</think>b", "a", "b"),
        ("glm45", "<think>a</think>b", "a", "b"),
        ("kimi_k25", "<think>a</think>b", "a", "b"),
        ("deepseek_v4", "<think>a</think>b", "a", "b"),
    ],
)
def test_thinking_off_still_parses_explicit_markers(
    gen: int, parser: str, text: str, reasoning: str, content: str
) -> None:
    msg = run(text, gen, reasoning_parser=parser, thinking=False)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_kimi_k3_tool_parser_alone_fills_no_reasoning_content(gen: int) -> None:
    text = "<|open|>think<|sep|>x<|close|>think<|sep|>hello"
    msg = run(text, gen, tool_parser="kimi_k3")
    assert (msg.reasoning_content, msg.content) == (None, "xhello")
    msg = run(text, gen, tool_parser="kimi_k3", reasoning_parser="kimi_k3")
    assert (msg.reasoning_content, msg.content) == ("x", "hello")


@GENS
def test_gemma4_tool_parser_alone_drops_channel_markers(gen: int) -> None:
    msg = run("<|channel>thought\nhmm<channel|>answer", gen, tool_parser="gemma4")
    assert (msg.reasoning_content, msg.content) == (None, "hmmanswer")


@GENS
@pytest.mark.parametrize(
    ("parser", "text", "opener"),
    [
        ("qwen3", "<think>abc<tool_call>x", "<tool_call>"),
        ("glm45", "<think>abc<tool_call>x", "<tool_call>"),
        ("deepseek_v4", "abc<｜DSML｜tool_calls>x", "<｜DSML｜tool_calls>"),
        ("gemma4", "<|channel>thought\nabc<|tool_call>x", "<|tool_call>"),
    ],
)
def test_reasoning_only_ends_reasoning_at_the_tool_opener(
    gen: int, parser: str, text: str, opener: str
) -> None:
    msg = run(text, gen, reasoning_parser=parser)
    assert (msg.reasoning_content, msg.content) == ("abc", opener + "x")
