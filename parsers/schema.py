"""Typing argument values by the declared tool's JSON schema (XML-style families).

Families whose arguments arrive as text (Qwen3-Coder, GLM, DSML, Kimi K3) turn each value into a
JSON value here, so the rules live in one place and batch and stream agree.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from parsers.jsonstream import dumps

STRING_TYPES = frozenset({"string", "str", "text", "varchar", "char", "enum"})


def tool_schemas(tools: Iterable[Any]) -> dict[str, Mapping[str, Any]]:
    """Map tool name -> parameters schema from OpenAI tool dicts (malformed entries skipped)."""
    out: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            continue
        params = fn.get("parameters")
        out[fn["name"]] = params if isinstance(params, Mapping) else {}
    return out


def schema_types(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The declared type names of a property schema, normalized to lower case.

    Handles `type` as a string or a list, and `anyOf`/`oneOf` alternatives; `null` last so a
    nullable string is still a string. Empty when undeclared.
    """
    if schema is None:
        return ()
    found: list[str] = []
    t = schema.get("type")
    if isinstance(t, str):
        found.append(t.lower())
    elif isinstance(t, list):
        found.extend(str(x).lower() for x in t)
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts:
                if isinstance(alt, Mapping):
                    found.extend(schema_types(alt))
    if not found and "enum" in schema:
        found.append("enum")
    if not found and "properties" in schema:
        found.append("object")
    return tuple(sorted(dict.fromkeys(found), key=lambda x: x == "null"))


def primary_type(schema: Mapping[str, Any] | None) -> str | None:
    """The first non-null declared type, or "null"/None."""
    types = schema_types(schema)
    for t in types:
        if t != "null":
            return t
    return types[0] if types else None


def is_string_type(t: str | None) -> bool:
    return t is not None and t in STRING_TYPES


def _number(text: str) -> int | float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isinf(value) or math.isnan(value):
        return None
    if value.is_integer() and all(c not in text for c in ".eE"):
        return int(value)
    return value


def _integer(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    num = _number(text)
    if isinstance(num, float) and num.is_integer():
        return int(num)
    return num


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        raise ValueError(text)
    return value


def _no_constant(text: str) -> Any:
    raise ValueError(text)


# one decoder (what `json.loads` with these hooks builds on every call)
_FINITE_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)


def loads_finite(text: str) -> Any:
    """`json.loads` that refuses what JSON output cannot carry (`1e999`, `NaN`, `Infinity`):
    raises ValueError, so callers keep the text as written and arguments stay valid JSON."""
    return _FINITE_DECODER.decode(text)


def _finite(value: Any) -> bool:
    """No inf/NaN anywhere in `value` (JSON cannot carry them: `1e999`, `NaN`)."""
    if isinstance(value, float):
        return not (math.isinf(value) or math.isnan(value))
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple, set)):
        return all(_finite(v) for v in value)
    return True


def _structured(text: str) -> Any:
    """JSON, else a Python literal, else the text; a value with inf/NaN stays the text (as
    vLLM/SGLang coerce it), so arguments stay valid JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
    return value if _finite(value) else text


def convert_by_type(text: str, t: str | None) -> Any:
    """Convert `text` by the type name `t` (the rules of docs/parsers.md, Qwen3-Coder).

    string types stay strings; integer -> int; number -> int/float keeping the value (`2.50`
    -> 2.5, `1e-3` -> 0.001, `42.0` -> 42.0 stays a float unless written as an integer);
    boolean `true/false` any case; object/array -> JSON, else a Python literal; `null` -> None.
    Anything that does not convert stays the string as written.
    """
    if t is None or is_string_type(t):
        return text
    stripped = text.strip()
    if stripped.lower() == "null" or t == "null":
        return None if stripped.lower() in ("null", "none", "") else text
    if t in ("integer", "int") or t.startswith(("int", "uint", "long", "short", "unsigned")):
        value = _integer(stripped)
        return text if value is None else value
    if t in ("number", "float", "double") or t.startswith(("float", "double", "num")):
        value = _number(stripped)
        return text if value is None else value
    if t in ("boolean", "bool", "binary"):
        low = stripped.lower()
        if low in ("true", "false"):
            return low == "true"
        return text
    if t in ("object", "array", "dict", "list") or t.startswith(("dict", "list")):
        value = _structured(stripped)
        if t in ("object", "dict") and not isinstance(value, dict) and value is not text:
            return value
        return value
    return text


def convert_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """Convert by a property schema; tries each declared type in order, strings last."""
    types = schema_types(schema)
    if not types:
        return text
    if any(is_string_type(t) for t in types) and not any(t == "null" for t in types):
        return text
    for t in types:
        if is_string_type(t):
            continue
        value = convert_by_type(text, t)
        if value is not text:
            return value
    return text


def value_json(value: Any) -> str:
    """Canonical JSON of a converted value (floats as Python writes them: 2.5, 0.001)."""
    return dumps(value)
