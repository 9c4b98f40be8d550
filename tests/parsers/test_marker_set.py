"""`MarkerSet.starts_at`: the tag decision the tag-driven scanners (Qwen3-Coder, GLM, DSML
via `TagBuffer`) share."""

from __future__ import annotations

import pytest

from parsers.scan import MarkerSet

TAGS = MarkerSet(("<arg_key>", "<arg_value>", "</tool_call>"))


@pytest.mark.parametrize(
    ("text", "pos", "expected"),
    [
        ("<arg_key>city", 0, "<arg_key>"),
        ("  </tool_call>", 2, "</tool_call>"),
        ("<arg_", 0, None),  # may still become either <arg_key> or <arg_value>
        ("xx<arg_v", 2, None),
        ("<", 0, None),
        ("<arg_x>", 0, False),
        ("text", 0, False),
        ("", 0, False),  # nothing is not a proper prefix
        ("<arg_key>", 1, False),
    ],
)
def test_starts_at(text: str, pos: int, expected: str | bool | None) -> None:
    assert TAGS.starts_at(text, pos) == expected


def test_starts_at_prefers_the_longest_marker() -> None:
    tags = MarkerSet(("<|channel>", "<|channel>thought\n"))
    assert tags.starts_at("<|channel>thought\nhi") == "<|channel>thought\n"
    assert tags.starts_at("<|channel>x") == "<|channel>"
