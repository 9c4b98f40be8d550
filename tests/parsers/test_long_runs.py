"""Long runs of one character anywhere in an output (linear on any input).

Held text that was rescanned, or grown with `+=` on an attribute, once per chunk made long
runs quadratic when streamed a few characters at a time: 20,000 blanks after a Hermes call
object or between Qwen3-Coder tags, inside a DeepSeek string value, before a Muse header, cost
10-38 s. The fixes keep such text in pieces and feed long runs of blank chunks to the scanners
in doubling batches (`parsers.scan.BlankRuns`). Time is the bench's to measure
(`bench_parsers.py`, adversarial table); these tests check that none of it changes a result:
each run, inserted at the sample's marker edges, streamed in small chunks (batched) equals
the whole text parsed at once (never batched).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from parser_samples import Sample, case_id, sample_cases

from parsers import parse, stream
from parsers.ids import counter_ids
from parsers.scan import BLANK_BATCH, BlankRuns

CASES = sample_cases()
RUNS = {
    "spaces": " " * (3 * BLANK_BATCH),
    "newlines": "\n" * (3 * BLANK_BATCH),
    "mixed blanks": " \t\r\n" * BLANK_BATCH,
    "letters": "a" * (3 * BLANK_BATCH),
}
_EDGES = frozenset('<>{}[]:=,|"\n')


def _positions(text: str) -> list[int]:
    """Marker and value edges of `text` (at most 16, spread over it), its start and its end."""
    edges = [i for i in range(1, len(text)) if text[i] in _EDGES or text[i - 1] in _EDGES]
    step = max(1, len(edges) // 16)
    return sorted({0, len(text), *edges[::step]})


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_long_run_streamed_equals_batch(case: tuple[Sample, int], run: str) -> None:
    sample, gen = case
    kw = sample.kwargs(gen)
    for pos in _positions(sample.text):
        text = sample.text[:pos] + RUNS[run] + sample.text[pos:]
        whole = parse(text, id_factory=counter_ids(), **kw)
        for size in (3, 7):
            got = stream(_chunks(text, size), id_factory=counter_ids(), **kw)
            assert got == whole, f"{run} at {pos}, {size}-char chunks"


def test_blank_runs_wait_in_doubling_batches_and_keep_order() -> None:
    runs = BlankRuns()
    passed: list[str] = []
    for _ in range(BLANK_BATCH // 4 * 8):  # 8x the batch limit in 4-blank chunks
        taken = runs.take("  \t ")
        if taken is not None:
            passed.append(taken)
    # first the run up to the limit chunk by chunk, then batches as long as the run before
    sizes = [len(p) for p in passed]
    assert sizes[: BLANK_BATCH // 4] == [4] * (BLANK_BATCH // 4)
    assert sizes[BLANK_BATCH // 4 :] == [BLANK_BATCH, 2 * BLANK_BATCH, 4 * BLANK_BATCH]
    assert not runs.wait
    assert runs.take("   ") is None and runs.wait  # a run of 8x the limit: this one waits
    assert runs.take("x y") == "   x y"  # other text takes the waiting blanks with it, first
    assert not runs.wait
    assert runs.take(" ") == " "  # the run starts over
    assert runs.flush() == ""


def test_blank_runs_flush_gives_what_waits() -> None:
    runs = BlankRuns()
    for _ in range(BLANK_BATCH + 3):
        runs.take(" ")
    waiting = runs.flush()
    assert waiting and not waiting.strip() and not runs.wait


def _tool(name: str, *params: str) -> dict[str, Any]:
    props = {p: {"type": "string"} for p in params}
    return {"type": "function", "function": {"name": name, "parameters": {"properties": props}}}


# Names and tags with a length bound (longer is no name or tag), built around the bound: a
# stream stops waiting at the bound, so whole text must not find the tag past it either.
BOUNDED: dict[str, tuple[dict[str, Any], Callable[[int], str], int]] = {
    "qwen3-coder parameter name": (
        {"tool_parser": "qwen3_coder", "tools": [_tool("f", "a", "b")]},
        lambda n: (
            "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n<parameter=b"
            + " " * n
            + ">\ny\n</parameter>\n</function>\n</tool_call>"
        ),
        256 - 1,
    ),
    "glm key": (
        {"tool_parser": "glm47"},
        lambda n: (
            "<tool_call>f<arg_key>" + "k" * n + "</arg_key><arg_value>v</arg_value></tool_call>"
        ),
        256,
    ),
    "atem tag": (
        {"tool_parser": "muse"},
        lambda n: (
            ' to=f<|message|><atem:invoke name="f"'
            + " " * n
            + '><atem:parameter name="a">1</atem:parameter></atem:invoke><|eom|>ok'
        ),
        512 - len('<atem:invoke name="f">'),
    ),
    "muse header": (
        {"tool_parser": "muse", "reasoning_parser": "muse"},
        lambda n: "hi<|eom|><|start|>" + " " * n + "assistant to=user<|message|>Done.<|eot|>",
        256 - len("assistant to=user"),
    ),
    "muse bare header": (
        {"tool_parser": "muse", "reasoning_parser": "muse"},
        lambda n: " to=self" + "a" * n + "<|message|>x<|eom|>",
        256 - len(" to=self<|message|>"),
    ),
}


@pytest.mark.parametrize("delta", [-1, 0, 1, 2, 40])
@pytest.mark.parametrize("shape", list(BOUNDED))
def test_a_name_at_its_length_bound_parses_alike_for_every_split(shape: str, delta: int) -> None:
    kw, make, bound = BOUNDED[shape]
    text = make(bound + delta)
    whole = parse(text, id_factory=counter_ids(), generation=2, **kw)
    for i in range(1, len(text)):
        got = stream([text[:i], text[i:]], id_factory=counter_ids(), generation=2, **kw)
        assert got == whole, f"split at {i}"
