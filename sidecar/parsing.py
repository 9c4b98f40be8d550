"""The incremental parser serving one request, built from its already-decided `ParsePlan`.

The route is decided once (`parsers.policy.plan_request`); `StreamParser(plan=...)` only
runs the engine that plan names, so the sidecar never re-runs route selection.
"""

from __future__ import annotations

from parsers.api import StreamParser, parse_text
from parsers.plan import ParsePlan
from parsers.types import ParsedMessage


def parser_for(plan: ParsePlan) -> StreamParser:
    return StreamParser(plan=plan)


def parse_whole(
    plan: ParsePlan, text: str, finish_reason: str, parser: StreamParser | None = None
) -> ParsedMessage:
    """A non-streamed response: what `parsers.parse` gives (`parsers.api.parse_text`: the
    whole-output batch path, else the engine fed once). `parser`: a fresh `parser_for(plan)`
    built beforehand (while the engine worked), used when the engine runs."""
    return parse_text(plan, text, finish_reason, parser=parser)
