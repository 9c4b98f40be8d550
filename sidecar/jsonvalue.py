"""Decoding a request body and checking free-form JSON values (pure functions).

A client mistake must be a 400 naming the field, never a failure later on (a `RecursionError`
in a template, a `UnicodeEncodeError` writing the engine request, `ValueError` from
`json.dumps(allow_nan=False)`). So the body is decoded strictly here:

- the bytes must be UTF-8 (`json.loads(bytes)` would let the surrogate bytes `ED A0 80`
  through as a lone surrogate);
- no string or key may hold a lone surrogate (`"\\ud800"`): the text could not be encoded
  again. Found by a regex over the text first, so only such bodies are walked;
- nesting deeper than the decoder's stack allows, and integers over Python's digit limit,
  are 400s naming the field (the value is found by decoding again, on that error path only).

Free-form values (tool parameters, tool-call arguments, `chat_template_kwargs`, JSON
schemas) are then checked by `check_free_form`: nesting at most `MAX_DEPTH` levels (templates
recurse over them) and no `NaN`/`Infinity` (JSON output cannot carry them).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sidecar.errors import APIError, bad_request

MAX_DEPTH = 64  # nesting of a free-form value (an object or array counts one level)
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def type_name(value: object) -> str:
    """The JSON type of a decoded value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def join(path: str, key: str | int) -> str:
    """`path.key` / `path[i]`; a key that is not valid Unicode is written escaped (`\\ud800`)
    so the error naming it can be sent."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _has_surrogate(key):
        key = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{path}.{key}" if path else key


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Digits:
    """An integer literal longer than Python converts: kept as text to find its field."""

    def __init__(self, text: str) -> None:
        self.text = text


def _int_or_digits(text: str) -> int | _Digits:
    try:
        return int(text)
    except ValueError:
        return _Digits(text)


def _find(value: Any, hit: Any) -> tuple[str, Any] | None:
    """The path of the first value (or key) where `hit(x)` is true, without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if hit(item):
            return path, item
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                if hit(key):
                    return join(path, key), key
                stack.append((join(path, key), child))
        elif isinstance(item, list):
            stack.extend((join(path, i), child) for i, child in reversed(list(enumerate(item))))
    return None


def _where(path: str) -> str:
    return f"'{path}'" if path else "the body"


def decode_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object; every decoding mistake is a 400 naming the field."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(raw, exc) from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad_request(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        key = _deep_field(text)
        raise bad_request(f"{_where(key)} is nested too deeply to decode", key or None) from None
    except ValueError:  # an integer literal over Python's digit limit
        raise _long_integer(text) from None
    if not isinstance(body, dict):
        raise bad_request(f"request body must be a JSON object, got {type_name(body)}")
    if _ESCAPED_SURROGATE.search(text):
        found = _find(body, lambda x: isinstance(x, str) and _has_surrogate(x))
        if found is not None:
            path, _ = found
            raise bad_request(
                f"{_where(path)} holds a lone UTF-16 surrogate (\\ud800-\\udfff): "
                "not valid Unicode text",
                path or None,
            )
    return body


def decode_embedded(text: str, path: str) -> Any:
    """A JSON value a client sent as a string (history tool-call arguments, a structural
    tag): `ValueError` when it is not JSON (the caller decides what that means); a 400
    naming `path` when it nests past the decoder's stack or holds a lone surrogate (the
    body's own check saw only the escaped text, `"\\ud800"`)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise bad_request(f"'{path}' is nested more than {MAX_DEPTH} levels deep", path) from None
    if _ESCAPED_SURROGATE.search(text):
        found = _find(value, lambda x: isinstance(x, str) and _has_surrogate(x))
        if found is not None:
            inner = f" (at '{found[0]}')" if found[0] else ""
            raise bad_request(
                f"'{path}' holds a lone UTF-16 surrogate (\\ud800-\\udfff){inner}: "
                "not valid Unicode text",
                path,
            )
    return value


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> APIError:
    """A 400 naming the string that holds bytes that are not UTF-8 (decoded again with the
    bad bytes escaped as lone surrogates, to find them)."""
    where = f"byte {exc.start} ({raw[exc.start : exc.end]!r})"
    try:
        body = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return bad_request(f"request body is not valid UTF-8: {where}")
    found = _find(body, lambda x: isinstance(x, str) and _has_surrogate(x))
    path = found[0] if found is not None else ""
    return bad_request(f"{_where(path)} is not valid UTF-8: {where}", path or None)


def _deep_field(text: str, limit: int = 256) -> str:
    """The top-level key whose value nests past `limit` levels (scanned on the error path
    only: the decoder says no more than that it ran out of stack)."""
    depth, key, in_string, escaped, start = 0, "", False, False, 0
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    rest = text[i + 1 : i + 64].lstrip()
                    if rest.startswith(":"):
                        key = text[start + 1 : i]
        elif char == '"':
            in_string, start = True, i
        elif char in "[{":
            depth += 1
            if depth > limit:
                return key
        elif char in "]}":
            depth -= 1
    return ""


def _long_integer(text: str) -> APIError:
    try:
        body = json.loads(text, parse_int=_int_or_digits)
    except (ValueError, RecursionError) as exc:
        return bad_request(f"request body is not valid JSON: {exc}")
    found = _find(body, lambda x: isinstance(x, _Digits))
    if found is None:
        return bad_request("request body is not valid JSON")
    path, digits = found
    return bad_request(
        f"{_where(path)} is an integer with {len(digits.text.lstrip('-'))} digits: out of range",
        path or None,
    )


def check_free_form(value: Any, path: str) -> None:
    """A 400 naming the place when `value` nests deeper than `MAX_DEPTH` or holds a number
    JSON cannot carry (`NaN`, `Infinity`, `1e999`)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise bad_request(
                    f"'{path}' is nested more than {MAX_DEPTH} levels deep (at '{where}')",
                    path or None,
                )
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((child, join(where, key), depth + 1) for key, child in children)
        elif isinstance(item, float) and not math.isfinite(item):
            raise bad_request(f"'{where}' is {item!r}: JSON numbers must be finite", where or None)
