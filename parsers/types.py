"""Result types shared by every parser route."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

RouteKind = Literal["pass_through", "legacy_jail", "parser_v2"]

# The per-feed types (`ToolCall`, `ToolCallDelta`, `Delta`) keep an instance `__dict__` (no
# slots): the hot paths below fill it directly, cheaper than the frozen `__init__`'s
# `object.__setattr__` per field.


@dataclass(frozen=True)
class ToolCall:
    """One complete tool call of a parsed message."""

    id: str
    name: str
    arguments: str  # JSON text, OpenAI wire format (non-ASCII kept, not escaped)


@dataclass(frozen=True)
class ToolCallDelta:
    """A streamed piece of the tool call at `index`."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None  # the next fragment of the arguments JSON


@dataclass(frozen=True)
class Delta:
    """One streamed chunk of a message (what an OpenAI stream chunk's `delta` holds)."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallDelta] = field(default_factory=list)


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


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """A whole parsed response, and the route that served it."""

    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    route: RouteKind
