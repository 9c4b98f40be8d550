"""The Hermes whole-call fast path (`hermes.whole_call`, issue 14 item 7) gives exactly the
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
from parsers.families import hermes
from parsers.families.base import PIECE
from parsers.ids import counter_ids

FAST = FastPath(hermes.HermesScanner, {"tool_parser": "hermes", "reasoning_parser": "qwen3"})
BASE = FAST.base
assert_same_everywhere = FAST.assert_same_everywhere


@pytest.mark.parametrize(
    "case", [c for c in sample_cases() if c[0].tool_parser == "hermes"], ids=case_id
)
def test_samples(case: tuple[Sample, int]) -> None:
    FAST.assert_sample(*case)


def call_text(args: Any, seps: tuple[str, str], name: str, head: str, tail: str) -> str:
    body = json.dumps(args, separators=seps, ensure_ascii=False, allow_nan=True)
    return f'<tool_call>{head}{{"name": {json.dumps(name)}, "arguments": {body}{tail}'


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            JSON,
            SEPS,
            st.sampled_from(["get_weather", "f", 'a"b', "x\\y", "", " ", "\u2003"]),
            st.sampled_from(["\n", "", " \n "]),
            st.sampled_from(["}\n</tool_call>", "}</tool_call>", "} </tool_call", "}}", "}"]),
        ),
        min_size=1,
        max_size=3,
    ),
    prose=st.sampled_from(["", "Hi. ", "<think>r</think>ok ", "Use `<tool_call>` tags. "]),
)
def test_generated_calls(calls: list[Any], prose: str) -> None:
    text = prose + "".join(call_text(*c) + "\n" for c in calls)
    assert_same_everywhere(text)


PIECES = [
    "<tool_call>",
    "</tool_call>",
    '{"name": "f", "arguments": ',
    '{"a": ',
    "1",
    ", ",
    '"x"',
    "[",
    "]",
    "}",
    "}}",
    "null",
    '"arguments": "{}"',
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
    real = hermes.whole_call

    def spy(text: str) -> Any:
        result = real(text)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(hermes, "whole_call", spy)
    # the engine's own fast path: with the whole-output batch path off (parsers.batch)
    monkeypatch.setattr(BatchPath, "whole_fast", False)
    yield seen


def test_taken_on_bench_text(taken: list[bool]) -> None:
    text, kw, units = bench_text("hermes")
    msg = parse(text, generation=2, id_factory=counter_ids(), **kw)
    assert len(msg.tool_calls) == units
    # every call but one cut by `feed_in_pieces` (batch feeds the machine PIECE characters at
    # a time; a call across a piece boundary takes the reader)
    assert len(taken) == units
    assert taken.count(False) <= -(-len(text) // PIECE) - 1, taken
    assert_same_everywhere(text)


def test_not_taken_on_escapes(taken: list[bool]) -> None:
    text = '<tool_call>{"name": "f", "arguments": {"a": "x\\u00e9"}}</tool_call>'
    msg = parse(text, generation=2, id_factory=counter_ids(), **BASE)
    assert taken == [False]
    assert msg.tool_calls[0].arguments == '{"a": "xé"}'  # the reader decodes it
