"""The Hermes whole-call fast path (`hermes.whole_call`, issue 14 item 7) gives exactly the
result of the character-by-character reader: calls, arguments, content, reasoning, route and
finish reason, in both generations and under every tool_choice; and it is taken on the
bench's realistic text."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_samples import Sample, case_id, sample_cases

from parsers import parse
from parsers.errors import ConfigError
from parsers.families import hermes
from parsers.families.base import PIECE
from parsers.ids import counter_ids
from parsers.types import ParsedMessage

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]
VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"tool_choice": "none", "tools": TOOLS},
    {"tool_choice": "auto", "tools": TOOLS},
    {"tool_choice": "required", "tools": TOOLS},
    {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "tools": TOOLS},
    {"thinking": False},
    {"prompt": "<think>"},
)
BASE = {"tool_parser": "hermes", "reasoning_parser": "qwen3"}


def both(text: str, kw: dict[str, Any]) -> tuple[ParsedMessage | str, ParsedMessage | str]:
    """(fast path on, off); a ConfigError (a variant the setup refuses) on both sides alike."""
    out: list[ParsedMessage | str] = []
    for fast in (True, False):
        hermes.HermesScanner.whole_fast = fast
        try:
            out.append(parse(text, id_factory=counter_ids(), **kw))
        except ConfigError as exc:
            out.append(f"ConfigError: {exc}")
        finally:
            hermes.HermesScanner.whole_fast = True
    return out[0], out[1]


def assert_same_everywhere(text: str, base: dict[str, Any] = BASE) -> None:
    for gen in (1, 2):
        for variant in VARIANTS:
            fast, slow = both(text, {**base, **variant, "generation": gen})
            assert fast == slow, (gen, variant, text)


@pytest.mark.parametrize(
    "case", [c for c in sample_cases() if c[0].tool_parser == "hermes"], ids=case_id
)
def test_samples(case: tuple[Sample, int]) -> None:
    sample, gen = case
    kw = sample.kwargs(gen)
    for fast in (True, False):
        hermes.HermesScanner.whole_fast = fast
        try:
            got = sample.batch(gen)
        finally:
            hermes.HermesScanner.whole_fast = True
        if fast:
            first = got
    assert first == got
    assert_same_everywhere(sample.text, {k: kw[k] for k in ("tool_parser", "reasoning_parser")})


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.sampled_from('ab é"\\/\n\t<>{}[]:,\x01'), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='ab"\\ ', max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
SEPS = st.sampled_from(
    [(", ", ": "), (",", ":"), (" ,\n", " : "), (",\t", ":\r\n"), ("\n,", "\t:"), (" , ", " :")]
)


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


def bench_text() -> tuple[str, dict[str, Any], int]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_parsers

    kw, unit = bench_parsers.FAMILIES["hermes"]
    return bench_parsers.output(unit, 8), kw, 8


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    seen: list[bool] = []
    real = hermes.whole_call

    def spy(text: str) -> Any:
        result = real(text)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(hermes, "whole_call", spy)
    yield seen


def test_taken_on_bench_text(taken: list[bool]) -> None:
    text, kw, units = bench_text()
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
