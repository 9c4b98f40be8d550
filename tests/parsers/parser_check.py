"""Helpers for the family tests: batch + streaming agreement checked on every call."""

from __future__ import annotations

import json
import re
from typing import Any

from parsers import ParsedMessage, StreamParser, parse, stream
from parsers.ids import counter_ids

ROUTE = {1: "legacy_jail", 2: "parser_v2"}
UUID_ID = re.compile(r"call-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")


def run(text: str, gen: int | None, **kw: Any) -> ParsedMessage:
    """Batch result; asserts that character streaming and a 3-way split give the same."""
    reason = kw.pop("finish_reason", "stop")
    batch = parse(text, generation=gen, id_factory=counter_ids(), finish_reason=reason, **kw)
    if gen is not None:
        assert batch.route == ROUTE[gen]
    by_char = stream(
        list(text), generation=gen, id_factory=counter_ids(), finish_reason=reason, **kw
    )
    assert by_char == batch
    third = max(len(text) // 3, 1)
    pieces = [text[:third], text[third : 2 * third], text[2 * third :]]
    assert (
        stream(pieces, generation=gen, id_factory=counter_ids(), finish_reason=reason, **kw)
        == batch
    )
    return batch


def call_deltas_by_chunk(
    chunks: list[str], gen: int, **kw: Any
) -> list[tuple[int, str | None, str | None]]:
    """Feed `chunks` (then finish) and list each tool-call delta as (chunk index, name,
    arguments fragment); asserts the route of `gen`. Shows *when* a call goes out."""
    parser = StreamParser(generation=gen, id_factory=counter_ids(), **kw)
    seen: list[tuple[int, str | None, str | None]] = []
    for n, chunk in enumerate([*chunks, None]):
        deltas = parser.feed(chunk) if chunk is not None else parser.finish()
        for d in deltas:
            seen += [(n, c.name, c.arguments) for c in d.tool_calls]
    assert parser.route == ROUTE[gen]
    return seen


def calls(msg: ParsedMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in msg.tool_calls]


def tool(name: str, **props: Any) -> dict[str, Any]:
    """An OpenAI tool dict; props map a parameter to its JSON schema type."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    k: ({"type": v} if isinstance(v, str) else v) for k, v in props.items()
                },
            },
        },
    }
