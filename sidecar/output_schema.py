"""The JSON schema the engine's output must follow (guided JSON), for forced tool choices and
JSON response formats (pure functions).

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
from sidecar.toolschema import ANY_OBJECT, has_local_ref, parameters, rebase_refs, tool_name


def required_schema(tools: tuple[Mapping[str, Any], ...], parallel: bool = True) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    branches = []
    for i, tool in enumerate(tools):
        params = parameters(tool)
        if has_local_ref(params):
            key = f"tool{i}"
            defs[key] = rebase_refs(params, f"#/$defs/{key}")
            params = {"$ref": f"#/$defs/{key}"}
        branches.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [tool_name(tool)]},
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
        if tool_name(tool) == name:
            return dict(parameters(tool))
    return dict(ANY_OBJECT)  # unreachable: the policy rejected undeclared names


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
