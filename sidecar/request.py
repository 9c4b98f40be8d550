"""Validation of OpenAI chat-completion request bodies (pure: dict in, typed request out).

Only shape errors a client can fix are raised here, as 400s naming the field. The request
policy (`parsers.policy.plan_request`) owns the tool-choice / reasoning rules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from sidecar.errors import APIError, bad_request

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


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
class ChatRequest:
    body: Mapping[str, Any]  # the validated body, handed to the request policy as is
    model: str | None
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    sampling: Sampling
    tools: list[dict[str, Any]] = field(default_factory=list)


def decode_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    return body


def _number(body: Mapping[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"'{name}' must be a number", name)
    if not lo <= value <= hi:
        raise bad_request(f"'{name}' must be between {lo:g} and {hi:g}, got {value}", name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, lo: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"'{name}' must be an integer", name)
    if lo is not None and value < lo:
        raise bad_request(f"'{name}' must be at least {lo}, got {value}", name)
    return value


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    raise bad_request("'stop' must be a string or a list of strings", "stop")


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty list", "messages")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad_request(f"'{where}' must be an object", where)
        role = message.get("role")
        if role not in _ROLES:
            raise bad_request(
                f"'{where}.role' must be one of {', '.join(sorted(_ROLES))}", f"{where}.role"
            )
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise bad_request(f"'{where}.content' must be a string or a list", f"{where}.content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "text":
                    raise bad_request(
                        f"'{where}.content' parts must be text parts (this sidecar serves text)",
                        f"{where}.content",
                    )
    return messages


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad_request("'tools' must be a list", "tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or tool.get("type", "function") != "function":
            raise bad_request(
                f"'tools[{i}]' must be {{'type': 'function', 'function': {{...}}}}", f"tools[{i}]"
            )
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise bad_request(f"'tools[{i}].function.name' must be a non-empty string")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise bad_request(f"'tools[{i}].function.parameters' must be a JSON schema object")
    return tools


# The body fields `_sampling` reads: Sampling's own names, and OpenAI's newer max_tokens name.
_SAMPLING_KEYS = frozenset(f.name for f in fields(Sampling)) | {"max_completion_tokens"}
_NO_SAMPLING = Sampling()  # a request without sampling fields (checks them only when present)


def _sampling(body: Mapping[str, Any]) -> Sampling:
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    return Sampling(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        top_k=_integer(body, "top_k", -1),
        min_p=_number(body, "min_p", 0.0, 1.0),
        seed=_integer(body, "seed"),
        presence_penalty=_number(body, "presence_penalty", -2.0, 2.0),
        frequency_penalty=_number(body, "frequency_penalty", -2.0, 2.0),
        repetition_penalty=_number(body, "repetition_penalty", 0.0, 10.0),
        stop=_stop(body),
    )


def parse_chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """Validate a decoded body; raises `APIError` (400) naming the offending field."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("'model' must be a string", "model")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be a boolean", "stream")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not isinstance(options, dict):
            raise bad_request("'stream_options' must be an object", "stream_options")
        include_usage = bool(options.get("include_usage", False))
    if body.get("logprobs") or body.get("top_logprobs"):
        raise bad_request("'logprobs' are not supported by this sidecar", "logprobs")
    n = _integer(body, "n", 1)
    if n not in (None, 1):
        raise bad_request("'n' must be 1: this sidecar returns one choice", "n")
    sampling = _sampling(body) if not body.keys().isdisjoint(_SAMPLING_KEYS) else _NO_SAMPLING
    fmt = body.get("response_format")
    if fmt is not None and (
        not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema")
    ):
        raise bad_request(
            "'response_format.type' must be one of text, json_object, json_schema",
            "response_format",
        )
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs")
    return ChatRequest(
        body=body,
        model=model,
        messages=_messages(body),
        stream=stream,
        include_usage=include_usage,
        sampling=sampling,
        tools=_tools(body),
    )


__all__ = ["APIError", "ChatRequest", "Sampling", "decode_body", "parse_chat_request"]
