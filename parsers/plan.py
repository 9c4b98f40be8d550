"""The per-request parse plan: the one object the parser engines consume.

The request policy (`parsers.policy`, spec sections 4-5) turns settings + request + rendered
prompt into a `ParsePlan`; the engines (`parsers.v1`, `parsers.v2`) only follow it. Keeping
the decision here, apart from the state machines, lets both be tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from parsers.types import RouteKind

ToolMode = Literal["none", "auto", "required", "named"]


@dataclass(frozen=True)
class ParsePlan:
    route: RouteKind
    family: str | None  # registry family key, None for pass_through without parsers
    tool_parser: str | None  # canonical grammar name (e.g. "hermes", "qwen3_coder")
    reasoning_parser: str | None  # canonical reasoning parser name
    tool_mode: ToolMode = "auto"
    named_tool: str | None = None  # the function name under a named tool_choice
    parse_tools: bool = True  # False: answer is content (response_format json, pass_through)
    reasoning: bool = True  # False: thinking disabled, reasoning markers kept as content (V2)
    start_in_reasoning: bool = False  # output begins inside reasoning (forced or prefilled)
    tools: tuple[Mapping[str, Any], ...] = ()  # declared OpenAI tool dicts (schemas for typing)
