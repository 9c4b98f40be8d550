"""Guided-JSON schemas asked of the engine for forced tool choices (pure functions).

`required`: an array of calls `{"name", "parameters"}` (one schema branch per declared tool);
named: the bare arguments object of that tool. The parsers accept these shapes (spec
section 5). A JSON `response_format` with tool_choice auto is passed on as the schema too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parsers.plan import ParsePlan
from sidecar.request import ResponseFormat

_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def _parameters(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    params = tool.get("function", {}).get("parameters")
    return params if isinstance(params, Mapping) and params else _ANY_OBJECT


def _name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("function", {}).get("name"))


def required_schema(tools: tuple[Mapping[str, Any], ...]) -> dict[str, Any]:
    branches = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [_name(tool)]},
                "parameters": _parameters(tool),
            },
            "required": ["name", "parameters"],
        }
        for tool in tools
    ]
    return {"type": "array", "minItems": 1, "items": {"anyOf": branches}}


def named_schema(tools: tuple[Mapping[str, Any], ...], name: str) -> dict[str, Any]:
    for tool in tools:
        if _name(tool) == name:
            return dict(_parameters(tool))
    return dict(_ANY_OBJECT)  # unreachable: the policy rejected undeclared names


def guided_schema(plan: ParsePlan, fmt: ResponseFormat | None) -> dict[str, Any] | None:
    """The JSON schema the engine must follow for this request, or None; `fmt` is the
    request's validated `response_format`."""
    if plan.tool_mode == "required":
        return required_schema(plan.tools)
    if plan.tool_mode == "named" and plan.named_tool is not None:
        return named_schema(plan.tools, plan.named_tool)
    if fmt is not None and fmt.schema is not None:
        return dict(fmt.schema)
    return None
