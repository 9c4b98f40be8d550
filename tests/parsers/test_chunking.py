"""Principle 2: for any split of an output into chunks, the stream aggregate equals batch.

Runs over every family's samples (tests/parsers/parser_samples) in each of its generations.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_samples import Sample, case_id, sample_cases

CASES = sample_cases()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_two_way_split_equals_batch(case: tuple[Sample, int]) -> None:
    sample, gen = case
    text = sample.text
    for reason in ("stop", "length"):
        batch = sample.batch(gen, reason)
        assert batch.route == ("legacy_jail" if gen == 1 else "parser_v2")
        for i in range(len(text) + 1):
            got = sample.streamed([text[:i], text[i:]], gen, reason)
            assert got == batch, f"split at {i}: {text[:i]!r} | {text[i:]!r}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_character_stream_equals_batch(case: tuple[Sample, int]) -> None:
    sample, gen = case
    assert sample.streamed(list(sample.text), gen) == sample.batch(gen)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_expected_call_count(case: tuple[Sample, int]) -> None:
    sample, gen = case
    if sample.calls is None:
        pytest.skip("sample states no call count")
    msg = sample.batch(gen)
    assert len(msg.tool_calls) == sample.calls
    assert msg.finish_reason == ("tool_calls" if sample.calls else "stop")


@pytest.mark.parametrize("case", CASES, ids=case_id)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_multiway_splits_equal_batch(case: tuple[Sample, int], data: st.DataObject) -> None:
    sample, gen = case
    text = sample.text
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")))
    bounds = [0, *cuts, len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    assert sample.streamed(chunks, gen) == sample.batch(gen)
