"""Shared checks for batch fast paths: a fast path must give exactly the reader's result
(calls, arguments, content, reasoning, route, finish reason) in both generations and under
every tool_choice. Each fast path has a class flag that switches it off; `FastPath` names it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from parser_samples import Sample

from parsers import parse
from parsers.errors import ConfigError
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


@dataclass(frozen=True)
class FastPath:
    owner: type  # the class whose `whole_fast` flag switches the fast path
    base: dict[str, Any]  # tool_parser / reasoning_parser of the family

    def set(self, on: bool) -> None:
        self.owner.whole_fast = on  # type: ignore[attr-defined]

    def both(self, text: str, kw: dict[str, Any]) -> tuple[ParsedMessage | str, ...]:
        """(fast path on, off); a ConfigError (a variant the setup refuses) on both alike."""
        out: list[ParsedMessage | str] = []
        for fast in (True, False):
            self.set(fast)
            try:
                out.append(parse(text, id_factory=counter_ids(), **kw))
            except ConfigError as exc:
                out.append(f"ConfigError: {exc}")
            finally:
                self.set(True)
        return tuple(out)

    def assert_same_everywhere(self, text: str, base: dict[str, Any] | None = None) -> None:
        for gen in (1, 2):
            for variant in VARIANTS:
                fast, slow = self.both(text, {**(base or self.base), **variant, "generation": gen})
                assert fast == slow, (gen, variant, text)

    def assert_sample(self, sample: Sample, gen: int) -> None:
        results = []
        for fast in (True, False):
            self.set(fast)
            try:
                results.append(sample.batch(gen))
            finally:
                self.set(True)
        assert results[0] == results[1]
        kw = sample.kwargs(gen)
        self.assert_same_everywhere(
            sample.text, {k: kw[k] for k in ("tool_parser", "reasoning_parser")}
        )


def bench_text(family: str, units: int = 8) -> tuple[str, dict[str, Any], int]:
    """The bench's realistic output for `family`, its parser kwargs and its number of calls."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_parsers

    kw, unit = bench_parsers.FAMILIES[family]
    return bench_parsers.output(unit, units), kw, units
