"""V1 and V2 differ visibly in streaming (parsers.md "V1 and V2"), per family with both generations.

V2 streams argument fragments before a call ends; V1 sends each call whole in one delta.
Also principle 4: every streamed prefix of a call's arguments is a prefix of its final JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_samples import Sample, all_samples

from parsers import StreamParser
from parsers.ids import counter_ids
from parsers.jsonstream import JsonValueReader
from parsers.types import Delta

TWO_GEN = [s for s in all_samples() if set(s.generations) == {1, 2} and s.calls]
WITH_CALLS = [s for s in all_samples() if 2 in s.generations and s.calls]


def _feed_chars(sample: Sample, gen: int) -> tuple[list[list[Delta]], StreamParser]:
    p = StreamParser(**sample.kwargs(gen), id_factory=counter_ids())  # type: ignore[arg-type]
    per_chunk = [p.feed(c) for c in sample.text]
    per_chunk.append(p.finish())
    return per_chunk, p


def _args_per_call(per_chunk: list[list[Delta]]) -> dict[int, list[tuple[int, str]]]:
    out: dict[int, list[tuple[int, str]]] = {}
    for n, deltas in enumerate(per_chunk):
        for d in deltas:
            for c in d.tool_calls:
                out.setdefault(c.index, [])
                if c.arguments:
                    out[c.index].append((n, c.arguments))
    return out


def _first_chunk(per_chunk: list[list[Delta]], index: int) -> int:
    return min(
        n for n, ds in enumerate(per_chunk) for d in ds for c in d.tool_calls if c.index == index
    )


@pytest.mark.parametrize("sample", TWO_GEN, ids=lambda s: s.id)
def test_v2_starts_calls_early_v1_sends_whole_calls(sample: Sample) -> None:
    final = sample.batch(2)
    assert final.tool_calls, "sample must parse to calls"
    v2, p2 = _feed_chars(sample, 2)
    v1, p1 = _feed_chars(sample, 1)
    assert (p1.route, p2.route) == ("legacy_jail", "parser_v2")
    for i, call in enumerate(final.tool_calls):
        # V1: exactly one delta carries id, name and the complete arguments
        v1_deltas = [c for ds in v1 for d in ds for c in d.tool_calls if c.index == i]
        assert len(v1_deltas) == 1
        assert (v1_deltas[0].name, v1_deltas[0].arguments) == (call.name, call.arguments)
        # V2: the call (id and name) went out before the chunk where V1 released it (a call
        # without arguments may be complete the moment its name is)
        if call.arguments == "{}":
            assert _first_chunk(v2, i) <= _first_chunk(v1, i)
        else:
            assert _first_chunk(v2, i) < _first_chunk(v1, i)


FAMILIES = sorted({s.tool_parser for s in TWO_GEN if s.tool_parser})


@pytest.mark.parametrize("tool_parser", FAMILIES)
def test_v2_streams_argument_fragments_per_family(tool_parser: str) -> None:
    """For each family, some call's arguments arrive over several chunks under V2 only."""
    streamed = []
    for sample in (s for s in TWO_GEN if s.tool_parser == tool_parser):
        v2_args = _args_per_call(_feed_chars(sample, 2)[0])
        v1_args = _args_per_call(_feed_chars(sample, 1)[0])
        for i in v2_args:
            assert len(v1_args[i]) == 1
            if len({n for n, _ in v2_args[i]}) > 1:
                streamed.append((sample.id, i))
    assert streamed, f"no {tool_parser} sample streamed argument fragments under V2"


@pytest.mark.parametrize("sample", WITH_CALLS, ids=lambda s: s.id)
def test_streamed_arguments_are_prefixes_of_the_final_json(sample: Sample) -> None:
    per_chunk, _ = _feed_chars(sample, 2)
    final = {i: c.arguments for i, c in enumerate(sample.batch(2).tool_calls)}
    seen: dict[int, str] = {}
    for deltas in per_chunk:
        for d in deltas:
            for c in d.tool_calls:
                if c.arguments:
                    seen[c.index] = seen.get(c.index, "") + c.arguments
                    assert final[c.index].startswith(seen[c.index])
                    _check_partial(seen[c.index], json.loads(final[c.index]))
    for i, args in final.items():
        assert seen.get(i, "{}") == args
        json.loads(args)


def _check_partial(prefix: str, final: Any) -> None:
    """Closing the streamed prefix gives values that agree with the final ones: strings may
    be cut short, every other value is already complete (principle 4)."""
    reader = JsonValueReader()
    out, _ = reader.feed(prefix)
    assert reader.error is None  # valid JSON so far (families may keep the model's spacing)
    _agree(json.loads(out + reader.closers()), final)


def _agree(part: Any, final: Any) -> None:
    if isinstance(part, str):
        assert isinstance(final, str) and final.startswith(part)
    elif isinstance(part, dict):
        assert isinstance(final, dict)
        for k, v in part.items():
            assert k in final
            _agree(v, final[k])
    elif isinstance(part, list):
        assert isinstance(final, list) and len(part) <= len(final)
        for a, b in zip(part, final, strict=False):
            _agree(a, b)
    else:
        assert part == final and type(part) is type(final)
