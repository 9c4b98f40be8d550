"""Request policy (spec section 5): settings + request + prompt -> ParsePlan.

Placeholder until issue 4 lands the full policy (validations, thinking precedence, prefill
detection); the signature is the contract the engines and the sidecar use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parsers.plan import ParsePlan, ToolMode
from parsers.registry import TOOL_PARSERS, REASONING_PARSERS
from parsers.routing import select_route
from parsers.settings import ParserSettings

_FORCED_REASONING = {"kimi_k25", "deepseek_v4", "kimi_k3"}


def plan_request(
    settings: ParserSettings, request: Mapping[str, Any], prompt: str | None = None
) -> ParsePlan:
    route = select_route(settings, request)
    choice = request.get("tool_choice")
    mode: ToolMode = "auto"
    named: str | None = None
    if choice == "none":
        mode = "none"
    elif choice == "required":
        mode = "required"
    elif isinstance(choice, Mapping):
        mode, named = "named", str(choice["function"]["name"])
    thinking = request.get("thinking")
    reasoning = settings.reasoning_parser is not None and thinking is not False
    start = reasoning and (
        settings.reasoning_parser in _FORCED_REASONING
        or (prompt is not None and prompt.rstrip().endswith("<think>"))
    )
    tools = tuple(request.get("tools") or ())
    return ParsePlan(
        route=route.kind,
        family=settings.family,
        tool_parser=settings.tool_parser,
        reasoning_parser=settings.reasoning_parser,
        tool_mode=mode,
        named_tool=named,
        parse_tools=settings.tool_parser is not None,
        reasoning=reasoning,
        start_in_reasoning=start,
        tools=tools,
    )


def settings_for(
    tool_parser: str | None, reasoning_parser: str | None, generation: int | None
) -> ParserSettings:
    """Settings for a direct library call (`parsers.parse`): no environment is read."""
    tool = TOOL_PARSERS[tool_parser.lower().replace("-", "_")] if tool_parser else None
    reasoning = (
        REASONING_PARSERS[reasoning_parser.lower().replace("-", "_")] if reasoning_parser else None
    )
    family = (tool or reasoning).family.key if (tool or reasoning) else None
    version = "auto" if generation is None else str(generation)
    return ParserSettings(
        version=version,  # type: ignore[arg-type]
        tool_parser=tool.canonical if tool else None,
        reasoning_parser=reasoning.canonical if reasoning else None,
        family=family,
    )
