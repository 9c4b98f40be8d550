"""The Kimi K2 whole-arguments fast path (`kimi_k2._Call._whole`, issue 14 item 7) gives exactly the
result of the character-by-character reader: calls, arguments, content, reasoning, route and
finish reason, in both generations and under every tool_choice; and it is taken on the
bench's realistic text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastpath_check import JSON, SEPS, FastPath, bench_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_samples import Sample, case_id, sample_cases

from parsers import parse
from parsers.batch import BatchPath
from parsers.families import kimi_k2
from parsers.families.base import PIECE
from parsers.ids import counter_ids

FAST = FastPath(kimi_k2._Call, {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25"})
BASE = FAST.base
assert_same_everywhere = FAST.assert_same_everywhere


@pytest.mark.parametrize(
    "case", [c for c in sample_cases() if c[0].tool_parser == "kimi_k2"], ids=case_id
)
def test_samples(case: tuple[Sample, int]) -> None:
    FAST.assert_sample(*case)


def call_text(args: Any, seps: tuple[str, str], name: str, head: str, tail: str) -> str:
    body = json.dumps(args, separators=seps, ensure_ascii=False, allow_nan=True)
    return (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0"
        f"<|tool_call_argument_begin|>{head}{body}{tail}<|tool_calls_section_end|>"
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            JSON,
            SEPS,
            st.sampled_from(["get_weather", "f", "a.b", "x:y", "0", ""]),
            st.sampled_from(["\n", "", " \n "]),
            st.sampled_from(["<|tool_call_end|>", " \n<|tool_call_end|>", "<|tool_call_end", ""]),
        ),
        min_size=1,
        max_size=3,
    ),
    prose=st.sampled_from(["", "Hi. ", "<think>r</think>ok ", "Use `<|tool_call_begin|>` tags. "]),
)
def test_generated_calls(calls: list[Any], prose: str) -> None:
    text = prose + "".join(call_text(*c) + "\n" for c in calls)
    assert_same_everywhere(text)


PIECES = [
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "functions.f:0",
    "0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    '{"a": ',
    "1",
    ", ",
    '"x"',
    "[",
    "]",
    "}",
    "{}",
    "null",
    "\\",
    "NaN",
    "<think>",
    "</think>",
    " ",
    "\n",
    "`",
    '"',
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_marker_soup(pieces: list[str]) -> None:
    assert_same_everywhere("".join(pieces))


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    seen: list[bool] = []
    real = kimi_k2._Call._whole

    def spy(self: Any, text: str) -> Any:
        result = real(self, text)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(kimi_k2._Call, "_whole", spy)
    # the engine's own fast path: with the whole-output batch path off (parsers.batch)
    monkeypatch.setattr(BatchPath, "whole_fast", False)
    yield seen


def test_taken_on_bench_text(taken: list[bool]) -> None:
    text, kw, units = bench_text("kimi_k2")
    msg = parse(text, generation=2, id_factory=counter_ids(), **kw)
    assert len(msg.tool_calls) == units
    # every call but one cut by `feed_in_pieces` (batch feeds the machine PIECE characters at
    # a time; a call across a piece boundary takes the reader)
    assert len(taken) == units
    assert taken.count(False) <= -(-len(text) // PIECE) - 1, taken
    assert_same_everywhere(text)


def test_not_taken_on_escapes(taken: list[bool]) -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
        '{"a": "x\\u00e9"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    msg = parse(text, generation=2, id_factory=counter_ids(), **BASE)
    assert taken == [False]
    assert msg.tool_calls[0].arguments == '{"a": "xé"}'  # the reader decodes it


ESCAPES = [
    r'"\/"',
    r'"\u00e9"',
    r'"\ud83d\ude00"',
    r'"\ud800"',
    r'"\u0001"',
    r'"\u001F"',
    r'"\b\f\n\r\t"',
    r'"\u007f"',
    r'"\u2028"',
    r'"a\\b\"c"',
    r'"\\u0041"',
]


@pytest.mark.parametrize("value", ESCAPES)
def test_escapes(value: str) -> None:
    """Canonical and non-canonical escapes, as value and as key: the same as the reader."""
    for args in (f'{{"a": {value}}}', f'{{{value}: 1, "b": [{value}]}}'):
        text = (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
            f"<|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>"
        )
        assert_same_everywhere(text)
