"""A finished parser is freed as soon as its last reference goes, not by the cyclic collector.

The sidecar builds one parser per request; parsers that only the cyclic collector frees make it
run every ~20 requests and stall the request it lands on. So no part of a parser may refer back
to it: checked for every family's samples in each of its generations, with the collector off.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from parser_samples import Sample, case_id, sample_cases

from parsers import StreamParser


@pytest.fixture
def no_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@pytest.mark.usefixtures("no_collector")
@pytest.mark.parametrize("case", sample_cases(), ids=case_id)
def test_finished_parser_is_freed_by_refcount(case: tuple[Sample, int]) -> None:
    sample, gen = case
    parser = StreamParser(**sample.kwargs(gen))
    for i in range(0, len(sample.text), 3):
        parser.feed(sample.text[i : i + 3])
    parser.finish()
    runner = parser._runner
    refs = [weakref.ref(parser), weakref.ref(runner), weakref.ref(runner._machine)]
    del parser, runner
    assert [ref() is None for ref in refs] == [True, True, True]
