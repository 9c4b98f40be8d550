"""Result types shared by every parser route."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from parsers.record import Frozen, set_field

RouteKind = Literal["pass_through", "legacy_jail", "parser_v2"]

# Frozen dataclasses (fields, replace, asdict, FrozenInstanceError), with the methods written
# once in `Frozen` instead of compiled per class at import (see parsers.record).

_NEW_LIST: Any = object()  # default: a new empty list (the dataclass `default_factory`)


@dataclass(init=False, repr=False, eq=False)
class ToolCall(Frozen):
    """One complete tool call of a parsed message."""

    id: str
    name: str
    arguments: str  # JSON text, OpenAI wire format (non-ASCII kept, not escaped)

    def __init__(self, id: str, name: str, arguments: str) -> None:
        set_field(self, "id", id)
        set_field(self, "name", name)
        set_field(self, "arguments", arguments)


@dataclass(init=False, repr=False, eq=False)
class ToolCallDelta(Frozen):
    """A streamed piece of the tool call at `index`."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None  # the next fragment of the arguments JSON

    def __init__(
        self,
        index: int,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> None:
        set_field(self, "index", index)
        set_field(self, "id", id)
        set_field(self, "name", name)
        set_field(self, "arguments", arguments)


@dataclass(init=False, repr=False, eq=False)
class Delta(Frozen):
    """One streamed chunk of a message (what an OpenAI stream chunk's `delta` holds)."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallDelta] = field(default_factory=list)

    def __init__(
        self,
        content: str | None = None,
        reasoning_content: str | None = None,
        tool_calls: list[ToolCallDelta] = _NEW_LIST,
    ) -> None:
        set_field(self, "content", content)
        set_field(self, "reasoning_content", reasoning_content)
        set_field(self, "tool_calls", [] if tool_calls is _NEW_LIST else tool_calls)


_new = object.__new__


def content_delta(text: str) -> Delta:
    """`Delta(content=text)`, built without the frozen-dataclass `__init__` (per-feed hot path:
    each `object.__setattr__` there costs more than the rest of a plain prose feed)."""
    d = _new(Delta)
    fields = d.__dict__
    fields["content"] = text
    fields["reasoning_content"] = None
    fields["tool_calls"] = []
    return d


def make_delta(
    content: str | None, reasoning_content: str | None, tool_calls: list[ToolCallDelta]
) -> Delta:
    """`Delta(content, reasoning_content, tool_calls)`, built like `content_delta`."""
    d = _new(Delta)
    fields = d.__dict__
    fields["content"] = content
    fields["reasoning_content"] = reasoning_content
    fields["tool_calls"] = tool_calls
    return d


def args_delta(index: int, fragment: str) -> ToolCallDelta:
    """`ToolCallDelta(index, arguments=fragment)`, built like `content_delta`."""
    d = _new(ToolCallDelta)
    fields = d.__dict__
    fields["index"] = index
    fields["id"] = None
    fields["name"] = None
    fields["arguments"] = fragment
    return d


def reasoning_delta(text: str) -> Delta:
    """`Delta(reasoning_content=text)`, built like `content_delta`."""
    d = _new(Delta)
    fields = d.__dict__
    fields["content"] = None
    fields["reasoning_content"] = text
    fields["tool_calls"] = []
    return d


def tool_call(id: str, name: str, arguments: str) -> ToolCall:
    """`ToolCall(id, name, arguments)`, built like `content_delta` (the batch path builds one
    per call)."""
    c = _new(ToolCall)
    c.__dict__.update(id=id, name=name, arguments=arguments)
    return c


@dataclass(init=False, repr=False, eq=False)
class ParsedMessage(Frozen):
    """A whole parsed response, and the route that served it."""

    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    route: RouteKind

    def __init__(
        self,
        content: str | None,
        reasoning_content: str | None,
        tool_calls: list[ToolCall],
        finish_reason: str | None,
        route: RouteKind,
    ) -> None:
        set_field(self, "content", content)
        set_field(self, "reasoning_content", reasoning_content)
        set_field(self, "tool_calls", tool_calls)
        set_field(self, "finish_reason", finish_reason)
        set_field(self, "route", route)
