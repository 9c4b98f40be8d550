"""The incremental parser serving one request, built from its already-decided `ParsePlan`.

The route is decided once (`parsers.policy.plan_request`); this module only instantiates
the engine that plan names, so the sidecar never re-runs route selection.
"""

from __future__ import annotations

from typing import Protocol

from parsers.plan import ParsePlan
from parsers.types import Delta


class IncrementalParser(Protocol):
    def feed(self, chunk: str) -> list[Delta]: ...

    def finish(self, reason: str = "stop") -> list[Delta]: ...


class PassThrough:
    """`pass_through` route: all output is content, delivered as it arrives."""

    def feed(self, chunk: str) -> list[Delta]:
        return [Delta(content=chunk)] if chunk else []

    def finish(self, reason: str = "stop") -> list[Delta]:
        return []


def parser_for(plan: ParsePlan) -> IncrementalParser:
    if plan.route == "pass_through":
        return PassThrough()
    raise NotImplementedError(f"parser route {plan.route} is not available yet")
