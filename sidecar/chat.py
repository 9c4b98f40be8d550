"""OpenAI chat-completion response shapes from parser deltas (pure: no I/O, no clocks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from parsers.types import Delta, ParsedMessage, ToolCallDelta
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
class Accumulator:
    """What a stream has sent so far: which tool-call indexes were announced. `one_call`
    (`parallel_tool_calls: false`): calls after the first are not sent."""

    announced: set[int] = field(default_factory=set)
    one_call: bool = False

    def add(self, delta: Delta) -> dict[str, Any] | None:
        """The OpenAI `delta` object for `delta` (None when it carries nothing)."""
        out: dict[str, Any] = {}
        if delta.reasoning_content:
            out["reasoning_content"] = delta.reasoning_content
        if delta.content:
            out["content"] = delta.content
        calls = []
        for call in delta.tool_calls:
            if self.one_call and call.index > 0:
                continue
            first = call.index not in self.announced
            self.announced.add(call.index)
            calls.append(tool_call_delta(call, first))
        if calls:
            out["tool_calls"] = calls
        return out or None


@dataclass(slots=True)  # not frozen: a frozen init costs a call per field, once per request
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


def message_dict(message: ParsedMessage, one_call: bool = False) -> dict[str, Any]:
    """The response's `message`; `one_call` (`parallel_tool_calls: false`): the first call
    only, as vLLM's own chat server answers."""
    out: dict[str, Any] = {
        "role": "assistant",
        "content": message.content,
        "reasoning_content": message.reasoning_content,
    }
    if message.tool_calls:
        calls = message.tool_calls[:1] if one_call else message.tool_calls
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return out


def completion(
    id: str,
    created: int,
    model: str,
    message: ParsedMessage,
    usage: Usage | None,
    stop_reason: str | int | None = None,
    one_call: bool = False,
) -> dict[str, Any]:
    """A non-streamed `chat.completion` from the parsed message."""
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message_dict(message, one_call),
                "logprobs": None,
                "finish_reason": message.finish_reason,
                # vLLM's extension: the stop string or token id that ended generation
                "stop_reason": stop_reason,
            }
        ],
        "usage": usage.as_dict() if usage else None,
    }
