"""The incremental parser serving one request, built from its already-decided `ParsePlan`.

The route is decided once (`parsers.policy.plan_request`); `StreamParser(plan=...)` only
runs the engine that plan names, so the sidecar never re-runs route selection.
"""

from __future__ import annotations

from parsers.api import Aggregate, StreamParser
from parsers.plan import ParsePlan
from parsers.types import ParsedMessage


def parser_for(plan: ParsePlan) -> StreamParser:
    return StreamParser(plan=plan)


def parse_whole(
    plan: ParsePlan, text: str, finish_reason: str, parser: StreamParser | None = None
) -> ParsedMessage:
    """A non-streamed response: the same engine fed once (what `parsers.parse` does).
    `parser`: a fresh `parser_for(plan)` built beforehand (while the engine worked)."""
    if parser is None:
        parser = parser_for(plan)
    aggregate = Aggregate()
    aggregate.add(parser.feed(text))
    aggregate.add(parser.finish(finish_reason))
    return aggregate.message(parser.finish_reason, parser.route)
