"""Content hygiene: protocol tokens never reach `content` or `reasoning_content` as
stray text; a marker cut by the end of output is dropped; the model's prose is never dropped,
and under V2 markers inside quotes or code stay text."""

from __future__ import annotations

import pytest
from parser_check import run

GENS = pytest.mark.parametrize("gen", [1, 2])

# (tool parser, reasoning parser, text, content) with an out-of-place protocol token
STRAY = [
    ("kimi_k2", None, "hi<|tool_calls_section_end|> there", "hi there"),
    ("kimi_k2", None, "a<|tool_call_end|>b<|im_end|>", "ab"),
    ("hermes", None, "done</tool_call>.", "done."),
    ("hermes", "qwen3", "answer</think> more", "answer more"),
    ("hermes", "qwen3", "answer<|im_end|>", "answer"),
    ("qwen3_coder", None, "ok</tool_call>", "ok"),
    ("glm47", "glm45", "ok</tool_call><|user|>", "ok"),
    ("deepseek_v4", None, "ok</｜DSML｜invoke><｜end▁of▁sentence｜>", "ok"),
    ("gemma4", "gemma4", "x<channel|>y<tool_call|><turn|>", "xy"),
    ("gemma4", None, "<|channel>thought\nhmm<channel|>answer", "hmmanswer"),
]


@GENS
@pytest.mark.parametrize(("tool", "reasoning", "text", "content"), STRAY, ids=lambda v: str(v)[:30])
def test_stray_protocol_tokens_are_markup(
    gen: int, tool: str, reasoning: str | None, text: str, content: str
) -> None:
    kw = {"prompt": "x"} if tool == "deepseek_v4" else {}
    msg = run(text, gen, tool_parser=tool, reasoning_parser=reasoning, **kw)
    assert msg.content == content
    assert msg.tool_calls == []


@pytest.mark.parametrize(
    ("tool", "text"),
    [
        ("hermes", 'Write "</tool_call>" to close it.'),
        ("kimi_k2", "The token `<|tool_calls_section_end|>` ends a section."),
        ("gemma4", "Use '<channel|>' there."),
    ],
)
def test_v2_quoted_tokens_stay_text(tool: str, text: str) -> None:
    assert run(text, 2, tool_parser=tool).content == text


@GENS
@pytest.mark.parametrize(
    ("tool", "text", "content"),
    [
        ("hermes", "Let me check <tool_ca", "Let me check "),
        ("kimi_k2", "Checking<|tool_calls_sec", "Checking"),
        ("gemma4", "Sure<|tool_c", "Sure"),
        ("hermes", "a < b", "a < b"),  # prose is never dropped
        ("hermes", "x </", "x </"),
    ],
)
def test_marker_cut_by_the_end_of_output_is_dropped(
    gen: int, tool: str, text: str, content: str
) -> None:
    for reason in ("length", "stop"):
        assert run(text, gen, tool_parser=tool, finish_reason=reason).content == content


@GENS
def test_rejected_region_keeps_its_close_verbatim(gen: int) -> None:
    text = "<tool_call>not json</tool_call> after"
    assert run(text, gen, tool_parser="hermes").content == text


@GENS
def test_kimi_k3_message_close_is_markup(gen: int) -> None:
    for text in (
        "hi<|close|>message<|sep|>",
        "hi<|close|>message<|sep|><|end_of_msg|>",
        "<|open|>response<|sep|>hi<|close|>response<|sep|><|close|>message<|sep|>",
    ):
        for prompt in (None, "x"):
            msg = run(text, gen, tool_parser="kimi_k3", reasoning_parser="kimi_k3", prompt=prompt)
            assert (msg.content or "") + (msg.reasoning_content or "") == "hi"
