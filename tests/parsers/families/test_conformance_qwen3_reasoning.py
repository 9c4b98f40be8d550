"""Conformance: Qwen3 reasoning (`qwen3`) against vLLM's qwen3 reasoning parser tests.

Ported from vLLM `tests/reasoning/test_qwen3_reasoning_parser.py`.

vLLM's qwen3 parser assumes the prompt ended with `<think>` (Qwen3 / Qwen3.5 templates), so
untagged output is reasoning there. Our contract ("Qwen3, Hermes style": reasoning "not forced:
untagged output is content unless the prompt ended with `<think>` (prefill, section 5)") makes
that depend on the prompt: the ported cases pass a prompt ending with `<think>`; without it
the same outputs are content (checked too). Every case runs batch and streaming
(`parser_check.run`) in both generations.
"""

from __future__ import annotations

import pytest
from conformance_check import feed
from parser_check import run

R = {"tool_parser": None, "reasoning_parser": "qwen3"}
PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
GENS = pytest.mark.parametrize("gen", [1, 2])
TOOL_CALL_BODY = (
    "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n"
    "</function>\n</tool_call>"
)

CASES = [
    # (output, reasoning, content) with the prompt ending in `<think>`
    (
        "This is a reasoning section</think>This is the rest",
        "This is a reasoning section",
        "This is the rest",
    ),
    ("This is a reasoning section</think>", "This is a reasoning section", None),
    (
        "<think>This is a reasoning section</think>This is the rest",
        "This is a reasoning section",
        "This is the rest",
    ),
    ("This is the rest", "This is the rest", None),
    ("<think>This is a reasoning section</think>", "This is a reasoning section", None),
    (
        "<think>This is a reasoning\nsection</think>This is the rest\nThat",
        "This is a reasoning\nsection",
        "This is the rest\nThat",
    ),
    ("<think>This is a reasoning section", "This is a reasoning section", None),
    # `<tool_call>` without `</think>` ends reasoning; with no tool parser the call is content
    (
        "I need to read the file.\n\n" + TOOL_CALL_BODY,
        "I need to read the file.\n\n",
        TOOL_CALL_BODY,
    ),
    (
        "<think>I need to read the file.\n\n" + TOOL_CALL_BODY,
        "I need to read the file.\n\n",
        TOOL_CALL_BODY,
    ),
]


@GENS
@pytest.mark.parametrize(("text", "reasoning", "content"), CASES)
def test_vllm_qwen3_reasoning(gen: int, text: str, reasoning: str, content: str | None) -> None:
    msg = run(text, gen, prompt=PROMPT, **R)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_without_prefill_untagged_output_is_content(gen: int) -> None:
    # contract: "not forced: untagged output is content unless the prompt ended with <think>"
    msg = run("This is the rest", gen, **R)
    assert (msg.reasoning_content, msg.content) == (None, "This is the rest")
    msg = run("<think>This is a reasoning section</think>This is the rest", gen, **R)
    assert (msg.reasoning_content, msg.content) == (
        "This is a reasoning section",
        "This is the rest",
    )


@GENS
@pytest.mark.parametrize(
    ("chunks", "reasoning", "content"),
    [
        (
            ["<think>This is a reasoning section", "</think>", "This is the rest"],
            "This is a reasoning section",
            "This is the rest",
        ),
        (
            ["reasoning section", "</think>This is the rest"],
            "reasoning section",
            "This is the rest",
        ),
        (["<think>reasoning</think>"], "reasoning", ""),
        (["reasoning section", "</think>content"], "reasoning section", "content"),
        (
            ["I need to read the file.\n\n", "<tool_call>\n<function=bash>"],
            "I need to read the file.\n\n",
            "<tool_call>\n<function=bash>",
        ),
    ],
)
def test_vllm_multi_token_deltas(gen: int, chunks: list[str], reasoning: str, content: str) -> None:
    s = feed(chunks, gen, prompt=PROMPT, **R)
    assert (s.reasoning, s.content) == (reasoning, content)
    assert "<think>" not in s.reasoning


@GENS
@pytest.mark.parametrize(
    "text",
    [
        "This is plain content",
        "Some output without think tokens",
        "I need to read the file.\n\n" + TOOL_CALL_BODY,
    ],
)
def test_vllm_thinking_disabled(gen: int, text: str) -> None:
    # `enable_thinking: false`: Qwen3 templates then end the prompt with an empty think block
    closed = PROMPT + "\n</think>\n\n"
    msg = run(
        text, gen, request={"chat_template_kwargs": {"enable_thinking": False}}, prompt=closed, **R
    )
    assert (msg.reasoning_content, msg.content) == (None, text)
    msg = run(text, gen, thinking=False, **R)
    assert (msg.reasoning_content, msg.content) == (None, text)


@GENS
def test_tool_call_ends_reasoning_with_the_tool_parser_too(gen: int) -> None:
    # the same output with `qwen3_coder` configured: the call parses; the blanks before it are
    # markup (docs "Blanks around calls")
    msg = run(
        "I need to read the file.\n\n" + TOOL_CALL_BODY,
        gen,
        prompt=PROMPT,
        tool_parser="qwen3_coder",
        reasoning_parser="qwen3",
    )
    assert msg.reasoning_content == "I need to read the file."
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("bash", '{"command":"cat /etc/hosts"}')
    ]
    assert msg.content is None
