"""Guided-JSON schemas asked of the engine for forced tool choices (pure functions).

`required`: an array of calls `{"name", "parameters"}` (one schema branch per declared tool;
at most one item when the request sets `parallel_tool_calls: false`); named: the bare
arguments object of that tool. The parsers accept these shapes (docs/parser-selection.md). A
JSON `response_format` with tool_choice auto is passed on as the schema too.

A tool's parameters nested inside the call-array schema are no longer the schema's root, so
their local references (`#/$defs/Unit`, what pydantic writes) would point at nothing: such
parameters are moved under the root's `$defs` (one entry per tool) and their references
rewritten to point inside that entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parsers.plan import ParsePlan
from sidecar.request import ResponseFormat

_ANY_OBJECT: dict[str, Any] = {"type": "object"}


# Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference.
_DATA_KEYWORDS = frozenset(("enum", "const", "default", "examples"))


def _parameters(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    params = tool.get("function", {}).get("parameters")
    return params if isinstance(params, Mapping) and params else _ANY_OBJECT


def _has_local_ref(value: Any) -> bool:
    if isinstance(value, Mapping):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            return True
        return any(_has_local_ref(v) for k, v in value.items() if k not in _DATA_KEYWORDS)
    if isinstance(value, list):
        return any(_has_local_ref(v) for v in value)
    return False


def rebase_refs(value: Any, base: str) -> Any:
    """`value` with every local `$ref` ("#..." ) moved under the JSON pointer `base`:
    `#/$defs/Unit` -> `{base}/$defs/Unit`, `#` -> `base`. Request validation bounds the
    nesting (64 levels), so the recursion is bounded too."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str) and item.startswith("#"):
                out[key] = base + item[1:]
            elif key in _DATA_KEYWORDS:
                out[key] = item
            else:
                out[key] = rebase_refs(item, base)
        return out
    if isinstance(value, list):
        return [rebase_refs(item, base) for item in value]
    return value


def _name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("function", {}).get("name"))


def required_schema(tools: tuple[Mapping[str, Any], ...], parallel: bool = True) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    branches = []
    for i, tool in enumerate(tools):
        params = _parameters(tool)
        if _has_local_ref(params):
            key = f"tool{i}"
            defs[key] = rebase_refs(params, f"#/$defs/{key}")
            params = {"$ref": f"#/$defs/{key}"}
        branches.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [_name(tool)]},
                    "parameters": params,
                },
                "required": ["name", "parameters"],
            }
        )
    schema: dict[str, Any] = {"type": "array", "minItems": 1, "items": {"anyOf": branches}}
    if not parallel:
        schema["maxItems"] = 1
    if defs:
        schema["$defs"] = defs
    return schema


def named_schema(tools: tuple[Mapping[str, Any], ...], name: str) -> dict[str, Any]:
    for tool in tools:
        if _name(tool) == name:
            return dict(_parameters(tool))
    return dict(_ANY_OBJECT)  # unreachable: the policy rejected undeclared names


def guided_schema(
    plan: ParsePlan, fmt: ResponseFormat | None, parallel: bool = True
) -> dict[str, Any] | None:
    """The JSON schema the engine must follow for this request, or None; `fmt` is the
    request's validated `response_format`, `parallel` its `parallel_tool_calls`."""
    if plan.tool_mode == "required":
        return required_schema(plan.tools, parallel)
    if plan.tool_mode == "named" and plan.named_tool is not None:
        return named_schema(plan.tools, plan.named_tool)
    if fmt is not None and fmt.schema is not None:
        return dict(fmt.schema)
    return None
