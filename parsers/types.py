"""Result types shared by every parser route."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

RouteKind = Literal["pass_through", "legacy_jail", "parser_v2"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, OpenAI wire format (non-ASCII kept, not escaped)


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None  # the next fragment of the arguments JSON


@dataclass(frozen=True)
class Delta:
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallDelta] = field(default_factory=list)


@dataclass(frozen=True)
class ParsedMessage:
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    route: RouteKind
