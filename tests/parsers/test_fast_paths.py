"""The streaming fast paths give exactly the deltas of the general path, feed by feed.

`MarkerMachine.deltas` short-cuts the common few-character feeds (plain prose, a marker prefix
still arriving, a call region); `Runner(fast_paths=False)` sends every feed through
`MarkerMachine.feed` + `Emitter.push` instead. Both must return equal delta lists for every
feed and at finish, not only the same aggregate: a client sees the individual deltas.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_samples import Sample, all_openers, case_id, sample_cases

from parsers.api import make_plan
from parsers.emit import Emitter
from parsers.errors import ConfigError
from parsers.ids import counter_ids
from parsers.machine import MarkerMachine
from parsers.plan import ParsePlan
from parsers.runner import Runner
from parsers.types import Delta

CASES = sample_cases()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"tool_choice": "none"},
    {"tool_choice": "required", "tools": TOOLS},
    {"thinking": False},
    {"prompt": "<think>"},
)


def per_feed(plan: ParsePlan, chunks: list[str], fast: bool) -> list[list[Delta]]:
    runner = Runner(plan, id_factory=counter_ids(), fast_paths=fast)
    out = [runner.feed(chunk) for chunk in chunks]
    out.append(runner.finish("length"))
    return out


def assert_same(plan: ParsePlan, text: str, chunks: list[str]) -> None:
    assert "".join(chunks) == text
    fast, general = per_feed(plan, chunks, True), per_feed(plan, chunks, False)
    for i, (a, b) in enumerate(zip(fast, general, strict=True)):
        assert a == b, f"feed {i} ({chunks[i] if i < len(chunks) else 'finish'!r}): {a} != {b}"


def plans(sample: Sample, gen: int) -> list[ParsePlan]:
    out = []
    for variant in VARIANTS:
        try:
            out.append(make_plan(**(sample.kwargs(gen) | variant)))
        except ConfigError:
            continue  # e.g. a variant this family does not serve
    return out


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fixed_chunk_sizes(case: tuple[Sample, int]) -> None:
    sample, gen = case
    text = sample.text
    for plan in plans(sample, gen):
        for size in (1, 2, 3, 4, 7):
            assert_same(plan, text, [text[i : i + size] for i in range(0, len(text), size)])


def opener_kw(opener: Any, gen: int) -> dict[str, Any]:
    """The parser setup of an opener's family, in generation `gen`."""
    return {
        "tool_parser": opener.tool_parser,
        "reasoning_parser": opener.reasoning_parser,
        "thinking": opener.thinking,
        "prompt": opener.prompt,
        "generation": gen,
    }


QUOTED = (
    'The literal "{}" marker is part of the explanation.',
    "Write `{}` then 'it's {}' and\n```\n{}\n``` done.",
)


@pytest.mark.parametrize("opener", all_openers(), ids=lambda o: o.opener)
@pytest.mark.parametrize("gen", [1, 2])
def test_quoted_markers(opener: Any, gen: int) -> None:
    """Quote state decides whether a marker counts: the fast paths must keep it exact."""
    try:
        plan = make_plan(**opener_kw(opener, gen))
    except ConfigError:
        pytest.skip("a V2-only family")
    for template in QUOTED:
        text = template.format(*[opener.opener] * template.count("{}"))
        for size in (1, 2, 3, 4, 5):
            assert_same(plan, text, [text[i : i + size] for i in range(0, len(text), size)])


ATOMS = [" ", "  ", "\t", "\n", " \r", "'", '"', "`", "```", "it's", "word", "é☀", "x\n ", "a b"]


@st.composite
def prose_around_markers(draw: st.DrawFn) -> tuple[Any, str, list[str]]:
    """An opener's family, and prose of blanks, quotes, code ticks and (partial) markers."""
    opener = draw(st.sampled_from(all_openers()))
    marker = opener.opener
    atoms = [*ATOMS, marker, marker[: max(1, len(marker) // 2)], "<think>", "</think>", "<"]
    text = "".join(draw(st.lists(st.sampled_from(atoms), min_size=1, max_size=14)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=14))))
    bounds = [0, *cuts, len(text)]
    return opener, text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=prose_around_markers(), gen=st.sampled_from([1, 2]), variant=st.sampled_from(VARIANTS))
def test_random_prose_and_markers(
    case: tuple[Any, str, list[str]], gen: int, variant: dict[str, Any]
) -> None:
    opener, text, chunks = case
    try:
        plan = make_plan(**(opener_kw(opener, gen) | variant))
    except ConfigError:
        return  # a V2-only family asked for generation 1
    assert_same(plan, text, chunks)


def test_plain_prose_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is only worth something if the fast path runs: 4-character
    chunks of plain prose never reach the general `feed`."""
    general: list[str] = []
    feed = MarkerMachine.feed

    def spy(self: MarkerMachine, text: str) -> Any:
        general.append(text)
        return feed(self, text)

    monkeypatch.setattr(MarkerMachine, "feed", spy)
    plan = make_plan(tool_parser="hermes", reasoning_parser="qwen3", generation=2)
    text = "Plain prose, no markers at all and no quotes either. " * 3
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    runner = Runner(plan, id_factory=counter_ids())
    got = [runner.feed(c) for c in chunks]
    assert general == []
    assert "".join(d.content or "" for ds in got for d in ds) == text.rstrip()
    slow = Runner(plan, id_factory=counter_ids(), fast_paths=False)
    assert [slow.feed(c) for c in chunks] == got
    assert len(general) == len(chunks)


WORDS = "plain words of a long string argument, no marker, quote or backslash in them " * 3
BAR = "\uff5c"
STRING_ARGUMENTS = {
    "hermes": f'<tool_call>\n{{"name": "f", "arguments": {{"note": "{WORDS}"}}}}\n</tool_call>',
    "qwen3_coder": (
        f"<tool_call>\n<function=f>\n<parameter=note>\n{WORDS}\n</parameter>\n</function>\n"
        "</tool_call>"
    ),
    "glm47": f"<tool_call>f\n<arg_key>note</arg_key>\n<arg_value>{WORDS}</arg_value>\n</tool_call>",
    "deepseek_v4": (
        f'<{BAR}DSML{BAR}tool_calls>\n<{BAR}DSML{BAR}invoke name="f">\n<{BAR}DSML{BAR}parameter '
        f'name="note" string="true">{WORDS}</{BAR}DSML{BAR}parameter>\n</{BAR}DSML{BAR}invoke>\n'
        f"</{BAR}DSML{BAR}tool_calls>"
    ),
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
        f'{{"note": "{WORDS}"}}<|tool_call_end|><|tool_calls_section_end|>'
    ),
    "gemma4": f'<|tool_call>call:f{{note:<|"|>{WORDS}<|"|>}}<tool_call|>',
    "kimi_k3": (
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="note" '
        f'type="string"<|sep|>{WORDS}<|close|>argument<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|>"
    ),
}


@pytest.mark.parametrize("family", sorted(STRING_ARGUMENTS))
def test_string_arguments_take_the_fast_path(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above cover the call-region fast paths only if they run: in 4-char
    chunks, most of a long string argument goes out through `Emitter.args` (the scanners'
    `stream`, Kimi K3's own chunk function), not the scanner's `feed`; and the deltas equal
    the general path's."""
    taken: list[str] = []
    args = Emitter.args

    def spy(self: Emitter, fragment: str) -> list[Delta]:
        taken.append(fragment)
        return args(self, fragment)

    monkeypatch.setattr(Emitter, "args", spy)
    text = "Calling it. " + STRING_ARGUMENTS[family]
    plan = make_plan(tool_parser=family, generation=2)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    assert_same(plan, text, chunks)
    assert len("".join(taken)) > len(WORDS) * 3 // 4
    taken.clear()
    per_feed(plan, chunks, False)
    assert taken == []  # the general path never uses it


def test_dsml_tags_arriving_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """DSML tags are long: while one arrives (no `>` yet), the chunks only grow the buffer
    (`DsmlScanner.stream` returns "") instead of re-reading the tag each feed."""
    waits: list[str] = []
    args = Emitter.args

    def spy(self: Emitter, fragment: str) -> list[Delta]:
        waits.extend([fragment] if not fragment else [])
        return args(self, fragment)

    monkeypatch.setattr(Emitter, "args", spy)
    text = STRING_ARGUMENTS["deepseek_v4"]
    plan = make_plan(tool_parser="deepseek_v4", generation=2)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    assert_same(plan, text, chunks)
    assert len(waits) >= 10
