"""Helpers for the conformance suites (cases ported from vLLM, SGLang and Dynamo tests).

Those suites feed parsers token by token or `stream_interval` tokens at a time and look at the
deltas; here the same texts are fed as fixed-size character chunks (and as the chunk lists the
original tests use) through `parsers.StreamParser`, and the batch result comes from
`parser_check.run`, which also asserts that streaming equals batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from parsers import StreamParser
from parsers.ids import counter_ids
from parsers.types import Delta

# vLLM's shared `<think>` reasoning-parser cases, for parsers that start in reasoning (forced or
# prefilled): (model output, reasoning_content, content).
VLLM_THINK_CASES: list[tuple[str, str | None, str | None]] = [
    (
        "This is a reasoning section</think>This is the rest",
        "This is a reasoning section",
        "This is the rest",
    ),
    ("This is a reasoning section</think>", "This is a reasoning section", None),
    ("This is content", "This is content", None),
    ("This\nThat</think>This is the rest\nThat", "This\nThat", "This is the rest\nThat"),
    ("</think>This is the rest", None, "This is the rest"),
    (
        "<think>This is a reasoning section</think>This is the rest",
        "This is a reasoning section",
        "This is the rest",
    ),
    ("<think>This\nThat</think>This is the rest\nThat", "This\nThat", "This is the rest\nThat"),
    ("<think>This is a reasoning section", "This is a reasoning section", None),
    ("", None, None),
]


def sized(text: str, size: int) -> list[str]:
    """`text` cut into chunks of `size` characters (a stand-in for `stream_interval`)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Streamed:
    """What a client rebuilds from the deltas: content, reasoning, calls by index."""

    deltas: list[list[Delta]]  # per fed chunk (the last entry is finish())
    content: str = ""
    reasoning: str = ""
    names: dict[int, str] = field(default_factory=dict)
    ids: dict[int, str] = field(default_factory=dict)
    args: dict[int, str] = field(default_factory=dict)
    fragments: dict[int, list[str]] = field(default_factory=dict)

    def call_args(self, index: int) -> Any:
        return json.loads(self.args[index])


def feed(chunks: list[str], gen: int | None, **kw: Any) -> Streamed:
    """Feed `chunks` one by one to a StreamParser and rebuild the message from the deltas,
    asserting the OpenAI delta protocol on the way (a name at most once per index, an id with
    the first delta of each call)."""
    reason = kw.pop("finish_reason", "stop")
    p = StreamParser(generation=gen, id_factory=counter_ids(), **kw)
    per_chunk = [p.feed(c) for c in chunks]
    per_chunk.append(p.finish(reason))
    out = Streamed(per_chunk)
    for ds in per_chunk:
        for d in ds:
            out.content += d.content or ""
            out.reasoning += d.reasoning_content or ""
            for tc in d.tool_calls:
                if tc.index not in out.names:
                    assert tc.id, "the first delta of a call carries its id"
                    assert tc.name, "the first delta of a call carries its name"
                    out.ids[tc.index] = tc.id
                    out.names[tc.index] = tc.name
                    out.args[tc.index] = ""
                    out.fragments[tc.index] = []
                else:
                    assert tc.name is None, "a call's name is sent once"
                if tc.arguments:
                    out.args[tc.index] += tc.arguments
                    out.fragments[tc.index].append(tc.arguments)
    return out
