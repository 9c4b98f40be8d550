"""`JsonValueReader`'s batch fast path (a whole value decoded at once by the C scanner) gives
exactly what its character loop gives: the same output, end position and reader state, for
valid values written in any spacing, with escapes, and for broken or unfinished ones."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers.jsonstream import JsonValueReader

TEXT = st.text(
    alphabet=st.sampled_from(list('ab é\u2028"\\/\n\t\x01\U0001f600\ud800:{}[],')), max_size=6
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False,
    allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
BLANKS = st.text(alphabet=" \t\r\n", max_size=2)


def _spaced(value: object, blanks: list[str]) -> str:
    """`value` as JSON with the drawn blanks around every token (keys' colons included)."""
    b = blanks.pop() if blanks else ""
    if isinstance(value, dict):
        items = [
            f"{b}{json.dumps(k, ensure_ascii=bool(len(blanks) % 2))}{b}:{b}{_spaced(v, blanks)}"
            for k, v in value.items()
        ]
        return "{" + ",".join(items) + b + "}"
    if isinstance(value, list):
        return "[" + ",".join(b + _spaced(v, blanks) for v in value) + b + "]"
    return json.dumps(value, ensure_ascii=bool(len(blanks) % 2))


def _state(r: JsonValueReader) -> tuple[object, ...]:
    return (r.done, r.error, r.first, r.string_value, r.closers(), r.pending_token, r.end())


def _both(text: str, pos: int, keep_strings: bool, keep_space: bool) -> None:
    fast = JsonValueReader(keep_strings=keep_strings, keep_space=keep_space)
    chars = JsonValueReader(keep_strings=keep_strings, keep_space=keep_space)
    assert fast.feed(text, pos) == chars._chars(text, pos)
    assert _state(fast) == _state(chars)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=VALUES,
    blanks=st.lists(BLANKS, max_size=40),
    lead=BLANKS,
    tail=st.sampled_from(["", " ", "</tool_call>", ',"x":1}', "1"]),
    keep_strings=st.booleans(),
    keep_space=st.booleans(),
    cut=st.integers(0, 400),
    insert=st.sampled_from(["", "x", "\\", '"', ":", "NaN", "\n"]),
)
def test_fast_path_matches_the_char_loop(
    value: object,
    blanks: list[str],
    lead: str,
    tail: str,
    keep_strings: bool,
    keep_space: bool,
    cut: int,
    insert: str,
) -> None:
    body = _spaced(value, blanks)
    text = "pre" + lead + body + tail
    _both(text, 3, keep_strings, keep_space)  # whole
    broken = text[: 3 + cut] + insert + text[3 + cut :]
    _both(broken, 3, keep_strings, keep_space)  # damaged somewhere, or cut short
    _both(text[: 3 + cut], 3, keep_strings, keep_space)


@pytest.mark.parametrize(
    ("text", "keep_space", "out"),
    [
        ('{"a": [1, 2.5e3, true], "b": "x y"} rest', True, '{"a": [1, 2.5e3, true], "b": "x y"}'),
        ('{"a": [1, 2.5e3, true], "b": "x y"} rest', False, '{"a":[1,2.5e3,true],"b":"x y"}'),
        ('{"a" : 1}', True, '{"a":  1}'),  # blanks before a colon move after it
        ('{"a": "\\u00e9\\n"}', True, '{"a": "é\\n"}'),  # escapes re-written canonically
        ("[NaN]", True, "["),  # not JSON: an error, as before
    ],
)
def test_whole_values_are_written_canonically(text: str, keep_space: bool, out: str) -> None:
    r = JsonValueReader(keep_space=keep_space)
    got, _ = r.feed(text)
    assert got == out
    assert r.done == (r.error is None)


def test_a_whole_value_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the speed-up itself: a complete value is read without the char loop."""

    def no_char_loop(self: JsonValueReader, text: str, pos: int) -> tuple[str, int]:
        raise AssertionError("the char loop ran")

    monkeypatch.setattr(JsonValueReader, "_chars", no_char_loop)
    r = JsonValueReader(keep_space=True)
    assert r.feed('{"location": "Paris", "n": [1, 2]}</tool_call>') == (
        '{"location": "Paris", "n": [1, 2]}',
        34,
    )
    assert r.done
