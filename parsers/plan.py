"""The per-request parse plan: the one object the parse runner consumes.

The request policy (`parsers.policy`, docs/parser-selection.md) turns settings + request + rendered
prompt into a `ParsePlan`; the runner (`parsers.runner`: both generations, V1 legacy jail and
V2 unified parser, in the same machines) and the batch path (`parsers.batch`) only follow it.
Keeping the decision here, apart from the state machines, lets both be tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from parsers.types import RouteKind

ToolMode = Literal["none", "auto", "required", "named"]


@dataclass(frozen=True, slots=True)
class ParsePlan:
    """How one response is parsed: the route, the grammars and the request's choices."""

    route: RouteKind
    family: str | None  # registry family key, None for pass_through without parsers
    tool_parser: str | None  # canonical grammar name (e.g. "hermes", "qwen3_coder")
    reasoning_parser: str | None  # canonical reasoning parser name
    tool_mode: ToolMode = "auto"
    named_tool: str | None = None  # the function name under a named tool_choice
    parse_tools: bool = True  # False: answer is content (response_format json, pass_through)
    reasoning: bool = True  # thinking on (the request's controls, the prompt's prefill)
    start_in_reasoning: bool = False  # output begins inside reasoning (forced or prefilled)
    tools: tuple[Mapping[str, Any], ...] = ()  # declared OpenAI tool dicts (schemas for typing)
    # A reasoning parser is configured: reasoning text goes to reasoning_content (whatever
    # thinking says); False: the family's reasoning markers are markup and their text content
    reasoning_channel: bool = True
