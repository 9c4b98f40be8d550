"""Kimi K2's section scanner takes a long feed (V1 hands over the whole jailed region at once)
in bounded steps (`_FEED_STEP`), which keeps many markers in one feed linear
(`<|tool_call_begin|>` x 10,000 is the bench's adversarial shape). Stepping must never change a
result: each output here is parsed with the step as shipped, unbounded and tiny (a boundary
inside every marker)."""

from __future__ import annotations

import json

import pytest
from parser_samples.kimi_k2 import SB, SE, call

import parsers.families.kimi_k2 as k2
from parsers import parse, stream
from parsers.ids import counter_ids

KW = {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25", "prompt": "x"}
LONG = "é☀ " * 6000  # 18,000 characters: calls and text straddle the 32 KiB steps


def _outputs() -> dict[str, tuple[str, int]]:
    big_args = json.dumps({"text": LONG, "n": [1, 2, 3]})
    calls = "".join(
        call(f"functions.f{i}:{i}", big_args if i % 3 == 0 else '{"i": 1}') for i in range(9)
    )
    return {
        "calls": ("Intro. " + SB + calls + SE + " Outro.", 9),
        "openers": (SB + "<|tool_call_begin|>" * 5000 + SE + " tail", 0),
        "junk between calls": (SB + (LONG + call("functions.g:0", '{"a": 1}')) * 3 + SE, 3),
        "rejected bare call": ("<|tool_call_begin|>" + LONG * 3 + " not a header", 0),
        "cut section": (SB + call("functions.h:0", big_args) + LONG + "<|tool_call_begin|>", 1),
    }


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize("name", list(_outputs()))
def test_stepping_a_long_feed_changes_nothing(
    name: str, gen: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, calls = _outputs()[name]
    assert len(text) > k2._FEED_STEP  # the stepped path is taken
    results = []
    for step in (k2._FEED_STEP, 1 << 62, 7):
        monkeypatch.setattr(k2, "_FEED_STEP", step)
        results.append(parse(text, generation=gen, id_factory=counter_ids(), **KW))  # type: ignore[arg-type]
    assert results[0] == results[1] == results[2]
    msg = results[0]
    assert len(msg.tool_calls) == calls
    if name == "rejected bare call":
        # nothing lost across the steps of a rejected region (V2: back in the forced reasoning)
        assert (msg.content or "") + (msg.reasoning_content or "") == text
    for c in msg.tool_calls:
        json.loads(c.arguments)


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize(
    "tail",
    [
        "",  # cut off inside the header: not a call, its text kept
        ":0<|tool_call_argument_begin|>{}<|tool_call_end|>" + SE,  # a (long) named call
        "<|tool_call_end|> after" + SE,  # a header ended by a marker that is not its own
    ],
)
def test_a_long_header_held_in_pieces_is_the_whole_header(gen: int, tail: str) -> None:
    """A header with no `<` for many pieces is held piece by piece and joined once (joining
    per piece was quadratic: 2M characters 53 ms, 4M 311 ms); the result is the whole text's."""
    text = SB + "<|tool_call_begin|>functions." + "a" * 50_000 + tail
    whole = parse(text, generation=gen, id_factory=counter_ids(), **KW)  # type: ignore[arg-type]
    for size in (1, 4, 997):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        streamed = stream(chunks, generation=gen, id_factory=counter_ids(), **KW)
        assert streamed == whole, size
    kept = (whole.content or "") + (whole.reasoning_content or "")
    assert "a" * 50_000 in kept + "".join(c.name for c in whole.tool_calls)
