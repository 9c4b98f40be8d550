"""Principle 1: every character ends up exactly once (content, reasoning, or parsed markup).

Hypothesis builds random interleavings of prose, quoted markers, code spans, reasoning blocks
and well-formed calls for every family (parser_samples LOSSLESS entries), with the expected
content/reasoning/calls known piece by piece, and checks the batch and a random chunking.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_samples import Lossless, all_lossless

from parsers import parse, stream

# Prose with some visible character: whitespace alone between calls is markup (docs/parsers.md).
PROSE = st.text(alphabet="abcXYZ <>/|=é☀{}[]:,.!?\n-_0123", min_size=1, max_size=10).filter(
    str.strip
)
WRAPS = (' "{m}" ', " '{m}' ", " `{m}` ", "\n```\n{m}\n```\n")

CASES = [(lx, g) for lx in all_lossless() for g in lx.generations]


def _id(case: tuple[Lossless, int]) -> str:
    return f"{case[0].tool_parser or case[0].reasoning_parser}-v{case[1]}"


def _strips_blanks_before_calls(lx: Lossless, gen: int) -> bool:
    """Marker families treat blanks right before a call start as its markup (docs/parsers.md);
    channel grammars (Muse) do not. Probe which one this family is."""
    lead = "r" + lx.reasoning[1] if lx.lead_reasoning and lx.reasoning else ""
    msg = parse(
        lead + "a " + lx.calls[0].markup,
        tool_parser=lx.tool_parser,
        reasoning_parser=lx.reasoning_parser,
        generation=gen,
        prompt=lx.prompt,
    )
    assert msg.content in ("a", "a "), msg
    return msg.content == "a"


@st.composite
def outputs(draw: st.DrawFn, lx: Lossless, gen: int) -> tuple[str, str, str, list[Any]]:
    kinds = ["prose", "call"]
    if lx.reasoning:
        kinds.append("reasoning")
    if gen == 2 and lx.quoted:
        kinds.append("quoted")
    text, content, reasoning = [], [], []
    calls: list[Any] = []
    last = ""
    strip_before_call = _strips_blanks_before_calls(lx, gen)
    if lx.lead_reasoning:
        assert lx.reasoning is not None
        p = draw(PROSE)
        text.append(p + lx.reasoning[1])
        reasoning.append(p)
        last = "reasoning"
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=8)):
        if kind == "prose":
            p = draw(PROSE)
            text.append(p)
            content.append(p)
        elif kind == "quoted":
            q = draw(st.sampled_from(WRAPS)).format(m=draw(st.sampled_from(lx.quoted)))
            text.append(q)
            content.append(q)
        elif kind == "reasoning":
            assert lx.reasoning is not None
            p = draw(PROSE)
            text.append(lx.reasoning[0] + p + lx.reasoning[1])
            reasoning.append(p)
        else:
            c = draw(st.sampled_from(lx.calls))
            text.append(c.markup)
            calls.append((c.name, c.arguments))
            if strip_before_call and last in ("prose", "quoted"):
                content[-1] = content[-1].rstrip(" \t\r\n")
        last = kind
    return "".join(text), "".join(content), "".join(reasoning), calls


@pytest.mark.parametrize("case", CASES, ids=_id)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_lossless_interleavings(case: tuple[Lossless, int], data: st.DataObject) -> None:
    lx, gen = case
    text, content, reasoning, calls = data.draw(outputs(lx, gen), label="output")
    kw: dict[str, Any] = {
        "tool_parser": lx.tool_parser,
        "reasoning_parser": lx.reasoning_parser,
        "generation": gen,
        "prompt": lx.prompt,
    }
    batch = parse(text, **kw)
    assert batch.route == ("parser_v2" if gen == 2 else "legacy_jail")
    assert (batch.content or "") == content
    assert (batch.reasoning_content or "") == reasoning
    assert [(c.name, json.loads(c.arguments)) for c in batch.tool_calls] == calls
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=10), label="cuts")))
    bounds = [0, *cuts, len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    streamed = stream(chunks, **kw)
    assert (streamed.content, streamed.reasoning_content) == (
        batch.content,
        batch.reasoning_content,
    )
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        (c.name, c.arguments) for c in batch.tool_calls
    ]
