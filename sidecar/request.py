"""Validation of OpenAI chat-completion request bodies: raw bytes in, one typed request out
(pure).

The body is validated once, here, for the deployment's parser settings, into one frozen
`ChatRequest`: the messages as the template reads them, the tools, the response format, the
structural tag, the sampling parameters, and the request's facts for the parsers
(`parsers.policy.RequestFacts`: the tool choice checked against the tools, the thinking
controls and their answer, the reasoning effort, the route). Everything after (the prompt,
the parse plan, the guided-JSON schema, the engine body) reads those values, never the raw
body.

Every mistake a client can make in a field this sidecar reads is a 400 raised from here,
naming the field (`param` holds its path, e.g. `messages[2].tool_calls[0].function.arguments`):
a value of another JSON type at any depth, nesting (`sidecar.jsonvalue.MAX_DEPTH`), invalid
Unicode, numbers outside what the engines accept, a tool choice, thinking control or route the
deployment cannot serve (the parsers' `InvalidRequest`, turned into the same `APIError` in
one place, `parse_chat_request`). Fields this sidecar does not read are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from parsers.errors import InvalidRequest
from parsers.policy import RESPONSE_FORMATS, RequestFacts, ResponseFormatType, facts_for
from parsers.routing import ToolChoice, parse_tool_choice
from parsers.settings import ParserSettings
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
# Integer ranges the engines accept (vLLM and SGLang take 32-bit token counts and top_k;
# seeds are 64-bit).
_INT32 = 2**31 - 1
_SEED_MIN, _SEED_MAX = -(2**63), 2**64 - 1


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

    type: ResponseFormatType
    schema: Mapping[str, Any] | None = None
    structural_tag: Mapping[str, Any] | None = None  # the whole object, as the engine takes it


@dataclass(frozen=True)
class ChatRequest:
    """One request body, validated and typed (`parse_chat_request`)."""

    model: str | None
    messages: list[dict[str, Any]]  # template-ready (`prepare_messages`)
    stream: bool
    include_usage: bool
    sampling: Sampling
    # What the parsers read (tool choice, tools, thinking, effort, answer kind, route).
    facts: RequestFacts
    tools: list[dict[str, Any]] = field(default_factory=list)
    # `parallel_tool_calls: false`: at most one call in the answer (OpenAI's meaning).
    parallel_tool_calls: bool = True
    response_format: ResponseFormat | None = None
    # The structural tag asked for, in any spelling (docs/parser-selection.md), as an object.
    structural_tag: Mapping[str, Any] | None = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    content_parts: tuple[tuple[str, ...], ...] = ()  # each message's text parts
    tools_declared: bool = False  # the body has `tools` (even empty): templates see a list
    # vLLM's rendering fields: the assistant header after the messages (default), or the last
    # message left open for the model to continue (a prefill); never both.
    add_generation_prompt: bool = True
    continue_final_message: bool = False


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


# Content part types read as text, and the key holding each one's text (vLLM's).
_TEXT_PARTS = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "refusal": "refusal",
    "thinking": "thinking",
}


def _parts(content: Any, path: str) -> tuple[str, ...]:
    """Message content as its text parts: a string (one part), null (none), or a list of
    text parts (a part whose text is null is skipped, as vLLM skips it)."""
    if content is None:
        return ()
    if isinstance(content, str):
        return (content,)
    if not isinstance(content, list):
        raise _wrong(path, "a string, an array of text parts or null", content)
    texts = []
    for j, part in enumerate(content):
        where = join(path, j)
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise _wrong(where, "a text part object", part)
        kind = part.get("type")
        key = _TEXT_PARTS.get(kind) if isinstance(kind, str) else None
        if key is None:
            raise bad_request(
                f"'{path}' parts must be text parts (this sidecar serves text); "
                f"'{where}.type' is {part.get('type')!r}",
                f"{where}.type",
            )
        text = _string(part.get(key), f"{where}.{key}")
        if text is not None:
            texts.append(text)
    return tuple(texts)


def _arguments(value: Any, path: str) -> Any:
    """History tool-call arguments, decoded for the template as vLLM decodes them: a JSON
    string is its value, anything else (text that is not JSON, null) an empty object."""
    if isinstance(value, str):
        try:
            decoded = decode_embedded(value, path)
        except ValueError:
            return {}
        check_free_form(decoded, path)
        return decoded
    if isinstance(value, dict):
        check_free_form(value, path)
        return value
    if value is None:
        return {}
    raise _wrong(path, "a JSON string or an object", value)


def _tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """The calls in the shape vLLM's request model gives them: `id`, `function` (`arguments`,
    `name`), `type`."""
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
        arguments = _arguments(fn.get("arguments"), f"{where}.function.arguments")
        out: dict[str, Any] = {}
        call_id = _string(call.get("id"), f"{where}.id")
        if call_id is not None:
            out["id"] = call_id
        out["function"] = {"arguments": arguments, "name": name}
        out["type"] = "function"
        calls.append(out)
    return calls


def _message(message: dict[str, Any], where: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One message as vLLM's chat server hands it to the template, then as transformers
    gives it (reasoning also under `thinking`), and its content's text parts."""
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise bad_request(f"'{where}.role' must be a non-empty string", f"{where}.role")
    parts = _parts(message.get("content"), f"{where}.content")
    m: dict[str, Any] = {"role": role, "content": "\n".join(parts)}
    reasoning = None
    if role == "assistant":
        calls = _tool_calls(message.get("tool_calls"), f"{where}.tool_calls")
        if calls:  # no key for no calls: templates test `tool_calls is defined`
            m["tool_calls"] = calls
        reasoning = _string(message.get("reasoning"), f"{where}.reasoning")
        if reasoning is None:  # the older name, as vLLM reads it
            reasoning = _string(message.get("reasoning_content"), f"{where}.reasoning_content")
        if reasoning is not None:
            m["reasoning"] = reasoning
            m["reasoning_content"] = reasoning
    elif role == "tool":
        call_id = _string(message.get("tool_call_id"), f"{where}.tool_call_id")
        if call_id is not None:
            m["tool_call_id"] = call_id
    name = message.get("name")
    if isinstance(name, str):
        m["name"] = name
    task = message.get("task")
    if isinstance(task, str):
        m["task"] = task
    if role == "developer" and message.get("tools") is not None:
        tools = message["tools"]
        check_free_form(tools, f"{where}.tools")
        m["tools"] = tools
    if reasoning is not None:
        m = {"thinking": reasoning, **m}
    return m, parts


def prepare_messages(
    messages: Any, path: str = "messages"
) -> tuple[list[dict[str, Any]], tuple[tuple[str, ...], ...]]:
    """OpenAI messages as the template reads them (content as a string, text parts joined
    with a newline), and each one's text parts (for templates that read content as parts)."""
    if not isinstance(messages, list) or not messages:
        if messages is not None and not isinstance(messages, list):
            raise _wrong(path, "a non-empty array", messages)
        raise bad_request(f"'{path}' must be a non-empty array", path)
    out = []
    parts = []
    for i, message in enumerate(messages):
        where = f"{path}[{i}]"
        if not isinstance(message, dict):
            raise _wrong(where, "an object", message)
        m, p = _message(message, where)
        out.append(m)
        parts.append(p)
    return out, tuple(parts)


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
        # The shape vLLM's request model dumps: name, description and parameters (null when
        # absent), then the other keys as given.
        function: dict[str, Any] = {
            "name": _string(fn.get("name"), f"{where}.function.name", optional=False, empty=False),
            "description": _string(fn.get("description"), f"{where}.function.description"),
        }
        params = _object(fn.get("parameters"), f"{where}.function.parameters")
        if params is not None:
            check_free_form(params, f"{where}.function.parameters")
            # Templates walk a schema's properties as an object (`properties.items()`).
            if "properties" in params and not isinstance(params["properties"], dict):
                raise _wrong(
                    f"{where}.function.parameters.properties", "an object", params["properties"]
                )
        function["parameters"] = params
        _boolean(fn.get("strict"), f"{where}.function.strict")
        for key, value in fn.items():
            if key not in function:
                check_free_form(value, f"{where}.function.{key}")
                function[key] = value
        entry: dict[str, Any] = {"type": "function", "function": function}
        for key, value in tool.items():
            if key not in entry:
                check_free_form(value, f"{where}.{key}")
                entry[key] = value
        out.append(entry)
    return out


def _tool_choice(body: Mapping[str, Any]) -> ToolChoice:
    choice = body.get("tool_choice")
    if choice is None:
        return ToolChoice("auto")
    if isinstance(choice, dict):
        fn = choice.get("function")
        if fn is not None and not isinstance(fn, dict):
            raise _wrong("tool_choice.function", "an object", fn)
    return parse_tool_choice(choice)  # InvalidRequest names tool_choice


def _response_format(body: Mapping[str, Any]) -> ResponseFormat | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise _wrong("response_format", "an object", fmt)
    kind = fmt.get("type")
    if not isinstance(kind, str) or kind not in RESPONSE_FORMATS:
        raise bad_request(
            f"'response_format.type' must be one of {', '.join(RESPONSE_FORMATS)}",
            "response_format",
        )
    if kind == "json_object":
        return ResponseFormat("json_object", {"type": "object"})
    if kind == "json_schema":
        spec = _object(fmt.get("json_schema"), "response_format.json_schema") or {}
        _string(spec.get("name"), "response_format.json_schema.name")
        _boolean(spec.get("strict"), "response_format.json_schema.strict")
        schema = _object(spec.get("schema"), "response_format.json_schema.schema")
        if schema is not None:
            check_free_form(schema, "response_format.json_schema.schema")
        return ResponseFormat("json_schema", schema if schema is not None else {"type": "object"})
    if kind == "structural_tag":
        check_free_form(fmt, "response_format")
        return ResponseFormat("structural_tag", structural_tag=fmt)
    return ResponseFormat("text")


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


def parse_chat_request(body: Mapping[str, Any], settings: ParserSettings) -> ChatRequest:
    """Validate a decoded body for a deployment's parser settings; raises `APIError` (400)
    naming the offending field."""
    try:
        return _parse(body, settings)
    except InvalidRequest as exc:  # the parsers' client mistakes: the one conversion
        raise APIError(400, exc.message, param=exc.param, code=exc.code) from None


def _parse(body: Mapping[str, Any], settings: ParserSettings) -> ChatRequest:
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
    messages, parts = prepare_messages(body.get("messages"))
    add_generation_prompt, continue_final = _rendering(body)
    tools = _tools(body)
    choice = _tool_choice(body)
    parallel = _boolean(body.get("parallel_tool_calls"), "parallel_tool_calls") is not False
    tag = _structural_tag(body, fmt)
    facts = facts_for(
        settings,
        choice,
        tuple(tools),
        thinking=body.get("thinking"),
        reasoning_effort=body.get("reasoning_effort"),
        template_kwargs=kwargs,
        response_format=None if fmt is None else fmt.type,
        structural_tag=tag is not None,
    )
    return ChatRequest(
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        sampling=sampling,
        facts=facts,
        tools=tools,
        parallel_tool_calls=parallel,
        response_format=fmt,
        structural_tag=tag,
        chat_template_kwargs=kwargs,
        content_parts=parts,
        tools_declared=body.get("tools") is not None,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final,
    )


def _rendering(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """(`add_generation_prompt`, `continue_final_message`): continuing the last message needs
    the generation prompt off, said explicitly, as vLLM and transformers refuse both."""
    add = _boolean(body.get("add_generation_prompt"), "add_generation_prompt")
    cont = bool(_boolean(body.get("continue_final_message"), "continue_final_message"))
    if cont and add is not False:
        raise bad_request(
            "'continue_final_message' continues the last message, 'add_generation_prompt' "
            'starts a new one: send "add_generation_prompt": false with it',
            "continue_final_message",
        )
    return add is not False, cont


def read_chat_request(raw: bytes, settings: ParserSettings) -> ChatRequest:
    """Decode and validate a request body (`sidecar.jsonvalue.decode_body`, then
    `parse_chat_request`)."""
    return parse_chat_request(decode_body(raw), settings)


__all__ = [
    "APIError",
    "ChatRequest",
    "ResponseFormat",
    "Sampling",
    "decode_body",
    "parse_chat_request",
    "prepare_messages",
    "read_chat_request",
]
