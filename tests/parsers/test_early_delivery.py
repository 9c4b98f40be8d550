"""Principle 4 (V2): prose goes out as soon as it cannot start a marker; only a possible
marker prefix (and blanks that may precede a call start) is held back."""

from __future__ import annotations

import pytest

from parsers import StreamParser

PAIRS = [
    ("hermes", "qwen3"),
    ("qwen3_coder", "qwen3"),
    ("glm47", "glm45"),
    ("deepseek_v4", None),
    ("deepseek_v41", "deepseek_v41"),
]
TEXT = 'Sure, "quoted" it\'s fine: a < b and c > d. Done'


@pytest.mark.parametrize(("tool", "reasoning"), PAIRS)
def test_prose_is_delivered_as_it_arrives(tool: str, reasoning: str | None) -> None:
    # a prompt that opens no reasoning (DeepSeek V4.1 without one starts in its `<think>`)
    p = StreamParser(tool_parser=tool, reasoning_parser=reasoning, generation=2, prompt="x")
    sent = ""
    for i, ch in enumerate(TEXT):
        sent += "".join(d.content or "" for d in p.feed(ch))
        so_far = TEXT[: i + 1]
        if ch == "<":
            assert sent == so_far[:-1].rstrip()  # a possible marker start waits
        else:
            assert sent == so_far.rstrip(), (i, sent)
    sent += "".join(d.content or "" for d in p.finish())
    assert sent == TEXT


@pytest.mark.parametrize(("tool", "reasoning"), [p for p in PAIRS if p[1]])
def test_reasoning_is_delivered_as_it_arrives(tool: str, reasoning: str) -> None:
    p = StreamParser(
        tool_parser=tool, reasoning_parser=reasoning, generation=2, prompt="<|assistant|><think>"
    )
    got = ""
    for i, ch in enumerate("thinking about it"):
        got += "".join(d.reasoning_content or "" for d in p.feed(ch))
        assert got == "thinking about it"[: i + 1].rstrip()
