"""Validation of OpenAI chat-completion request bodies: raw bytes in, typed request out (pure).

The body is validated once, here, into typed values: the messages as the template reads
them, the tools, the tool choice, the response format, the thinking controls and the
sampling parameters. Everything after (thinking resolution, the request policy, the route,
the guided-JSON schema, the engine body) reads those values, never the raw body.

Every mistake a client can make in a field this sidecar reads is a 400 naming the field
(`param` holds its path, e.g. `messages[2].tool_calls[0].function.arguments`): a value of
another JSON type at any depth, nesting (`sidecar.jsonvalue.MAX_DEPTH`), invalid Unicode,
numbers outside what the engines accept. Fields this sidecar does not read are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from parsers.errors import InvalidRequest
from parsers.routing import ToolChoice, parse_tool_choice
from sidecar.errors import APIError, bad_request
from sidecar.jsonvalue import (
    check_free_form,
    decode_body,
    decode_embedded,
    join,
    type_name,
)

# More tools than any model is served with (OpenAI takes 128); each is validated, rendered
# and, for a forced choice, put into the guided schema: 300,000 of them in an 8 MiB body
# held the event loop for 10 s.
MAX_TOOLS = 2048
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_RESPONSE_FORMATS = ("text", "json_object", "json_schema", "structural_tag")
# Integer ranges the engines accept (vLLM and SGLang take 32-bit token counts and top_k;
# seeds are 64-bit).
_INT32 = 2**31 - 1
_SEED_MIN, _SEED_MAX = -(2**63), 2**64 - 1
# The message keys templates are given (others are ignored).
_MESSAGE_TEXT_KEYS = ("name", "tool_call_id", "reasoning_content")


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters passed through to the engine (None: the engine's default)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResponseFormat:
    """`response_format`, validated: its type, and the JSON schema the answer must follow
    (`json_object`: any object; `json_schema`: its schema) or the structural tag's spec."""

    type: str  # text | json_object | json_schema | structural_tag
    schema: Mapping[str, Any] | None = None
    structural_tag: Mapping[str, Any] | None = None  # the whole object, as the engine takes it


@dataclass(frozen=True)
class ChatRequest:
    model: str | None
    messages: list[dict[str, Any]]  # template-ready: content as text, arguments decoded
    stream: bool
    include_usage: bool
    sampling: Sampling
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: ToolChoice = field(default_factory=lambda: ToolChoice("auto"))
    # `parallel_tool_calls: false`: at most one call in the answer (OpenAI's meaning).
    parallel_tool_calls: bool = True
    response_format: ResponseFormat | None = None
    # The structural tag asked for, in any spelling (docs/parser-selection.md), as an object.
    structural_tag: Mapping[str, Any] | None = None
    thinking: Any = None  # the thinking controls, checked by `parsers.policy`
    reasoning_effort: Any = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)


def _wrong(path: str, expected: str, value: object) -> APIError:
    return bad_request(f"'{path}' must be {expected}, got {type_name(value)}", path)


def _string(value: Any, path: str, *, optional: bool = True, empty: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _wrong(path, "a string", value)
    if not empty and not value:
        raise bad_request(f"'{path}' must not be empty", path)
    return value


def _object(value: Any, path: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _wrong(path, "an object", value)
    return value


def _boolean(value: Any, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _wrong(path, "a boolean", value)
    return value


def _number(body: Mapping[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(name, "a number", value)
    if not lo <= value <= hi:  # also NaN, Infinity and 1e999
        raise bad_request(f"'{name}' must be between {lo:g} and {hi:g}, got {value!r}", name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, lo: int, hi: int = _INT32) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(name, "an integer", value)
    if not lo <= value <= hi:
        shown = str(value) if len(str(value)) <= 40 else f"an integer of {len(str(value))} digits"
        raise bad_request(f"'{name}' must be between {lo} and {hi}, got {shown}", name)
    return value


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list):
        for i, s in enumerate(stop):
            if not isinstance(s, str):
                raise bad_request(
                    f"'stop' must be a string or a list of strings; 'stop[{i}]' is a "
                    f"{type_name(s)}",
                    "stop",
                )
        return tuple(stop)
    raise bad_request("'stop' must be a string or a list of strings", "stop")


def _text(content: Any, path: str) -> str:
    """Message content as text: a string, null, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _wrong(path, "a string, an array of text parts or null", content)
    texts = []
    for j, part in enumerate(content):
        where = join(path, j)
        if not isinstance(part, dict):
            raise _wrong(where, "a text part object", part)
        if part.get("type") != "text":
            raise bad_request(
                f"'{path}' parts must be text parts (this sidecar serves text); "
                f"'{where}.type' is {part.get('type')!r}",
                f"{where}.type",
            )
        texts.append(_string(part.get("text"), f"{where}.text", optional=False))
    return "".join(t for t in texts if t)


def _arguments(value: Any, path: str) -> Any:
    """History tool-call arguments: a JSON string (decoded for the template; text that is not
    JSON stays text), an object, or null (no arguments)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            decoded = decode_embedded(value, path)
        except ValueError:
            return value
        check_free_form(decoded, path)
        return decoded
    if isinstance(value, dict):
        check_free_form(value, path)
        return value
    raise _wrong(path, "a JSON string or an object", value)


def _tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(path, "an array of tool calls", value)
    calls = []
    for k, call in enumerate(value):
        where = join(path, k)
        if not isinstance(call, dict):
            raise _wrong(where, "a tool call object", call)
        kind = _string(call.get("type"), f"{where}.type")
        if kind not in (None, "function"):
            raise bad_request(f"'{where}.type' must be \"function\", got {kind!r}", f"{where}.type")
        fn = call.get("function")
        if not isinstance(fn, dict):
            raise _wrong(f"{where}.function", "an object", fn)
        name = _string(fn.get("name"), f"{where}.function.name", optional=False, empty=False)
        out: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": name,
                "arguments": _arguments(fn.get("arguments"), f"{where}.function.arguments"),
            },
        }
        call_id = _string(call.get("id"), f"{where}.id")
        if call_id is not None:
            out["id"] = call_id
        calls.append(out)
    return calls


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        if messages is not None and not isinstance(messages, list):
            raise _wrong("messages", "a non-empty array", messages)
        raise bad_request("'messages' must be a non-empty array", "messages")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _wrong(where, "an object", message)
        role = message.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise bad_request(
                f"'{where}.role' must be one of {', '.join(sorted(_ROLES))}", f"{where}.role"
            )
        m: dict[str, Any] = {
            "role": "system" if role == "developer" else role,
            "content": _text(message.get("content"), f"{where}.content"),
            "tool_calls": _tool_calls(message.get("tool_calls"), f"{where}.tool_calls"),
        }
        for key in _MESSAGE_TEXT_KEYS:
            value = _string(message.get(key), f"{where}.{key}")
            if value is not None:
                m[key] = value
        out.append(m)
    return out


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _wrong("tools", "an array", tools)
    if len(tools) > MAX_TOOLS:
        raise bad_request(
            f"'tools' holds {len(tools)} tools: at most {MAX_TOOLS} are accepted", "tools"
        )
    out = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _wrong(where, "an object", tool)
        kind = _string(tool.get("type"), f"{where}.type")
        if kind not in (None, "function"):
            raise bad_request(f"'{where}.type' must be \"function\", got {kind!r}", f"{where}.type")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            raise _wrong(f"{where}.function", "an object", fn)
        function: dict[str, Any] = {
            "name": _string(fn.get("name"), f"{where}.function.name", optional=False, empty=False)
        }
        description = _string(fn.get("description"), f"{where}.function.description")
        if description is not None:
            function["description"] = description
        params = _object(fn.get("parameters"), f"{where}.function.parameters")
        if params is not None:
            check_free_form(params, f"{where}.function.parameters")
            # Templates walk a schema's properties as an object (`properties.items()`).
            if "properties" in params and not isinstance(params["properties"], dict):
                raise _wrong(
                    f"{where}.function.parameters.properties", "an object", params["properties"]
                )
            function["parameters"] = params
        strict = _boolean(fn.get("strict"), f"{where}.function.strict")
        if strict is not None:
            function["strict"] = strict
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(body: Mapping[str, Any]) -> ToolChoice:
    choice = body.get("tool_choice")
    if choice is None:
        return ToolChoice("auto")
    if isinstance(choice, dict):
        fn = choice.get("function")
        if fn is not None and not isinstance(fn, dict):
            raise _wrong("tool_choice.function", "an object", fn)
    return parse_tool_choice({"tool_choice": choice})  # InvalidRequest names tool_choice


def _response_format(body: Mapping[str, Any]) -> ResponseFormat | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise _wrong("response_format", "an object", fmt)
    kind = fmt.get("type")
    if not isinstance(kind, str) or kind not in _RESPONSE_FORMATS:
        raise bad_request(
            f"'response_format.type' must be one of {', '.join(_RESPONSE_FORMATS)}",
            "response_format",
        )
    if kind == "json_object":
        return ResponseFormat(kind, {"type": "object"})
    if kind == "json_schema":
        spec = _object(fmt.get("json_schema"), "response_format.json_schema") or {}
        _string(spec.get("name"), "response_format.json_schema.name")
        _boolean(spec.get("strict"), "response_format.json_schema.strict")
        schema = _object(spec.get("schema"), "response_format.json_schema.schema")
        if schema is not None:
            check_free_form(schema, "response_format.json_schema.schema")
        return ResponseFormat(kind, schema if schema is not None else {"type": "object"})
    if kind == "structural_tag":
        check_free_form(fmt, "response_format")
        return ResponseFormat(kind, structural_tag=fmt)
    return ResponseFormat(kind)


def _structural_tag(
    body: Mapping[str, Any], fmt: ResponseFormat | None
) -> Mapping[str, Any] | None:
    """The structural tag in any spelling: `response_format` of that type, vLLM's
    `structured_outputs.structural_tag` or its older top-level `structural_tag` (each a JSON
    object, or a string holding one, as vLLM takes them)."""
    if fmt is not None and fmt.structural_tag is not None:
        return fmt.structural_tag
    outputs = _object(body.get("structured_outputs"), "structured_outputs")
    if outputs is not None and outputs.get("structural_tag") is not None:
        return _tag_object(outputs["structural_tag"], "structured_outputs.structural_tag")
    if body.get("structural_tag") is not None:
        return _tag_object(body["structural_tag"], "structural_tag")
    return None


def _tag_object(value: Any, path: str) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            value = decode_embedded(value, path)
        except ValueError:
            raise bad_request(
                f"'{path}' must be a JSON object or a string holding one", path
            ) from None
    if not isinstance(value, dict):
        raise _wrong(path, "a JSON object or a string holding one", value)
    check_free_form(value, path)
    return value


# The body fields `_sampling` reads: Sampling's own names, and OpenAI's newer max_tokens name.
_SAMPLING_KEYS = frozenset(f.name for f in fields(Sampling)) | {"max_completion_tokens"}
_NO_SAMPLING = Sampling()  # a request without sampling fields (checks them only when present)


def _sampling(body: Mapping[str, Any]) -> Sampling:
    # Both names are checked; OpenAI's newer one wins when both are given.
    max_tokens = _integer(body, "max_completion_tokens", 1)
    legacy_max_tokens = _integer(body, "max_tokens", 1)
    if max_tokens is None:
        max_tokens = legacy_max_tokens
    return Sampling(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        top_k=_integer(body, "top_k", -1),
        min_p=_number(body, "min_p", 0.0, 1.0),
        seed=_integer(body, "seed", _SEED_MIN, _SEED_MAX),
        presence_penalty=_number(body, "presence_penalty", -2.0, 2.0),
        frequency_penalty=_number(body, "frequency_penalty", -2.0, 2.0),
        repetition_penalty=_number(body, "repetition_penalty", 0.0, 10.0),
        stop=_stop(body),
    )


def parse_chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """Validate a decoded body; raises `APIError` (400) naming the offending field."""
    try:
        return _parse(body)
    except InvalidRequest as exc:
        raise APIError(400, exc.message, param=exc.param, code=exc.code) from None


def _parse(body: Mapping[str, Any]) -> ChatRequest:
    model = _string(body.get("model"), "model")
    stream = _boolean(body.get("stream"), "stream") or False
    options = _object(body.get("stream_options"), "stream_options")
    include_usage = False
    if options is not None:
        include_usage = bool(_boolean(options.get("include_usage"), "stream_options.include_usage"))
    if _boolean(body.get("logprobs"), "logprobs"):
        raise bad_request("'logprobs' are not supported by this sidecar", "logprobs")
    if _integer(body, "top_logprobs", 0, 20):
        raise bad_request("'top_logprobs' are not supported by this sidecar", "top_logprobs")
    n = _integer(body, "n", 1)
    if n not in (None, 1):
        raise bad_request("'n' must be 1: this sidecar returns one choice", "n")
    sampling = _sampling(body) if not body.keys().isdisjoint(_SAMPLING_KEYS) else _NO_SAMPLING
    fmt = _response_format(body)
    kwargs = _object(body.get("chat_template_kwargs"), "chat_template_kwargs") or {}
    if kwargs:
        check_free_form(kwargs, "chat_template_kwargs")
    return ChatRequest(
        model=model,
        messages=_messages(body),
        stream=stream,
        include_usage=include_usage,
        sampling=sampling,
        tools=_tools(body),
        tool_choice=_tool_choice(body),
        parallel_tool_calls=_boolean(body.get("parallel_tool_calls"), "parallel_tool_calls")
        is not False,
        response_format=fmt,
        structural_tag=_structural_tag(body, fmt),
        thinking=body.get("thinking"),
        reasoning_effort=body.get("reasoning_effort"),
        chat_template_kwargs=kwargs,
    )


def read_chat_request(raw: bytes) -> ChatRequest:
    """Decode and validate a request body (`sidecar.jsonvalue.decode_body`, then
    `parse_chat_request`)."""
    return parse_chat_request(decode_body(raw))


__all__ = [
    "APIError",
    "ChatRequest",
    "ResponseFormat",
    "Sampling",
    "decode_body",
    "parse_chat_request",
    "read_chat_request",
]
