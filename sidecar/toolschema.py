"""Tool schemas as constraints: checked before the engine sees them, and re-rooted when a
part of one is used on its own (pure functions).

The engine's grammar compiler (xgrammar) compiles each tool's `parameters` as a schema root,
so a local reference (`#/$defs/Unit`, what pydantic writes) resolves there. What it cannot
express is a 400 naming the tool, found here, never an engine error passed on:
- a `$ref` that is not local (`https://...`, `other.json#...`): nothing is fetched, and the
  compiler would silently leave the value unconstrained;
- a local `$ref` that points at nothing;
- a `type` that is not a JSON Schema type;
- a `pattern` with a back-reference (`\\1`, `\\k<name>`), which regular grammars cannot hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from sidecar.errors import APIError

_TYPES = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))
_BACKREF = re.compile(r"\\(?:[1-9]|k<)")
ANY_OBJECT: dict[str, Any] = {"type": "object"}
# Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference.
_DATA_KEYWORDS = frozenset(("enum", "const", "default", "examples"))


def parameters(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The tool's parameters schema; a tool without one takes any JSON object."""
    params = tool.get("function", {}).get("parameters")
    return params if isinstance(params, Mapping) and params else ANY_OBJECT


def tool_name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("function", {}).get("name"))


def _walk(value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema object under `value` with its JSON pointer (data keywords skipped)."""
    if isinstance(value, Mapping):
        yield path, value
        for key, item in value.items():
            if key not in _DATA_KEYWORDS:
                yield from _walk(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}/{i}")


def resolve_pointer(root: Any, ref: str) -> Any:
    """The value a local `$ref` (`#`, `#/a/b`) points at in `root`; KeyError if none."""
    node = root
    if ref in ("#", "#/"):
        return node
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(ref)
    return node


def _problem(params: Mapping[str, Any]) -> tuple[str, str] | None:
    """(where, what is wrong) for the first part of `params` the grammar cannot express."""
    for path, node in _walk(params, "#"):
        ref = node.get("$ref")
        if ref is not None:
            if not isinstance(ref, str) or not ref.startswith("#"):
                return path, f"$ref {ref!r} is not local (only '#/...' references resolve)"
            if ref != "#" and not ref.startswith("#/"):
                return path, f"$ref {ref!r} is not a JSON pointer ('#/...')"
            try:
                resolve_pointer(params, ref)
            except KeyError:
                return path, f"$ref {ref!r} points at nothing in the tool's parameters"
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
        for k in kinds:
            if not isinstance(k, str) or k not in _TYPES:
                return path, f"type {k!r} is not a JSON Schema type"
        pattern = node.get("pattern")
        if isinstance(pattern, str) and _BACKREF.search(pattern):
            return path, f"pattern {pattern!r} uses a back-reference"
    return None


def check_tools(tools: tuple[Mapping[str, Any], ...], only_strict: bool = False) -> None:
    """A 400 naming the first tool whose parameters the grammar cannot express (`only_strict`:
    of the tools whose schema is pinned under `auto`, those with `strict: true`)."""
    for i, tool in enumerate(tools):
        if only_strict and tool.get("function", {}).get("strict") is not True:
            continue
        found = _problem(parameters(tool))
        if found is not None:
            where, what = found
            raise APIError(
                400,
                f"tool {tool_name(tool)!r}: its parameters cannot be enforced as a grammar: "
                f"{what} (at {where})",
                param=f"tools[{i}].function.parameters",
            )


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


def has_local_ref(value: Any) -> bool:
    return any(
        isinstance(node.get("$ref"), str) and node["$ref"].startswith("#")
        for _, node in _walk(value, "#")
    )


def standalone(part: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """`part` of the schema `root`, usable as a schema root of its own: when it has local
    references, `root` goes along under `$defs` and the references are rebased into it."""
    if not has_local_ref(part):
        return dict(part)
    base = "#/$defs/root"
    out = rebase_refs(part, base)
    out["$defs"] = {**out.get("$defs", {}), "root": rebase_refs(root, base)}
    return dict(out)
