"""OpenAI chat-completion response shapes from parser deltas (pure: no I/O, no clocks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from parsers.types import Delta, ToolCallDelta
from sidecar.engines.base import Usage


def tool_call_delta(call: ToolCallDelta, first: bool) -> dict[str, Any]:
    """One `delta.tool_calls[]` entry: index, then id/type/name once, then argument fragments."""
    out: dict[str, Any] = {"index": call.index}
    function: dict[str, Any] = {}
    if call.id is not None:
        out["id"] = call.id
        out["type"] = "function"
    if call.name is not None:
        function["name"] = call.name
    if call.arguments is not None:
        function["arguments"] = call.arguments
    elif first and call.name is not None:
        function["arguments"] = ""  # OpenAI sends an empty string before the fragments
    if function:
        out["function"] = function
    return out


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Accumulator:
    """What was sent so far; aggregates into the non-streamed message."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)

    def add(self, delta: Delta) -> dict[str, Any] | None:
        """Record `delta`; returns its OpenAI `delta` object (None when it carries nothing)."""
        out: dict[str, Any] = {}
        if delta.reasoning_content:
            self.reasoning.append(delta.reasoning_content)
            out["reasoning_content"] = delta.reasoning_content
        if delta.content:
            self.content.append(delta.content)
            out["content"] = delta.content
        calls = []
        for call in delta.tool_calls:
            first = call.index not in self.calls
            entry = self.calls.setdefault(call.index, _Call())
            entry.id = call.id or entry.id
            entry.name = call.name or entry.name
            if call.arguments:
                entry.arguments.append(call.arguments)
            calls.append(tool_call_delta(call, first))
        if calls:
            out["tool_calls"] = calls
        return out or None

    def finish_reason(self, engine_reason: str) -> str:
        return "tool_calls" if self.calls else engine_reason

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
            "reasoning_content": "".join(self.reasoning) if self.reasoning else None,
        }
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": "".join(call.arguments)},
                }
                for _, call in sorted(self.calls.items())
            ]
        return message


@dataclass(frozen=True)
class ChunkFactory:
    """`chat.completion.chunk` objects sharing one id, creation time and model."""

    id: str
    created: int
    model: str
    include_usage: bool

    def _chunk(self, choices: list[dict[str, Any]], usage: Usage | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.include_usage:
            chunk["usage"] = usage.as_dict() if usage else None
        return chunk

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._chunk([choice])

    def role(self) -> dict[str, Any]:
        return self.delta({"role": "assistant", "content": ""})

    def usage(self, usage: Usage) -> dict[str, Any]:
        return self._chunk([], usage)


def chunks_for(
    factory: ChunkFactory, acc: Accumulator, deltas: Iterable[Delta]
) -> list[dict[str, Any]]:
    out = []
    for delta in deltas:
        body = acc.add(delta)
        if body is not None:
            out.append(factory.delta(body))
    return out


def completion(
    id: str, created: int, model: str, acc: Accumulator, finish: str, usage: Usage | None
) -> dict[str, Any]:
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": acc.message(),
                "logprobs": None,
                "finish_reason": acc.finish_reason(finish),
            }
        ],
        "usage": usage.as_dict() if usage else None,
    }
