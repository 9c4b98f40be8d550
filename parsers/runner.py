"""Runs one response through the route its plan names: pass_through, legacy_jail or parser_v2."""

from __future__ import annotations

from collections.abc import Callable

from parsers.emit import Emitter
from parsers.families import reasoning_grammar, tool_grammar
from parsers.families.base import (
    CallContext,
    ChannelGrammar,
    Event,
    FamilyMachine,
    Generation,
    ReasoningGrammar,
    Text,
    ToolGrammar,
)
from parsers.ids import IdFactory, new_call_id
from parsers.machine import MarkerMachine, feed_in_pieces
from parsers.plan import ParsePlan
from parsers.types import Delta


class PassThrough(FamilyMachine):
    """No parser: every character is content."""

    def feed(self, text: str) -> list[Event]:
        return [Text(text)] if text else []

    def finish(self, reason: str = "stop") -> list[Event]:
        return []


def build_machine(plan: ParsePlan) -> tuple[FamilyMachine, Generation]:
    """The family machine for `plan` and the generation it runs."""
    if plan.route == "pass_through":
        return PassThrough(), 2
    generation: Generation = 1 if plan.route == "legacy_jail" else 2
    ctx = CallContext.from_tools(plan.tools)
    tool = tool_grammar(plan.tool_parser) if plan.tool_parser else None
    reasoning = reasoning_grammar(plan.reasoning_parser) if plan.reasoning_parser else None
    channel = next((g for g in (tool, reasoning) if isinstance(g, ChannelGrammar)), None)
    if channel is not None:
        return channel.machine(plan, generation, ctx), generation
    assert tool is None or isinstance(tool, ToolGrammar)
    assert reasoning is None or isinstance(reasoning, ReasoningGrammar)
    return MarkerMachine(plan, generation, tool, reasoning, ctx), generation


class Runner:
    """feed/finish -> deltas for one response; `finish_reason` is set by `finish`."""

    def __init__(
        self, plan: ParsePlan, *, id_factory: IdFactory = new_call_id, fast_paths: bool = True
    ) -> None:
        self.plan = plan
        self._machine, generation = build_machine(plan)
        self._emitter = Emitter(
            whole_calls=generation == 1,
            tool_mode=plan.tool_mode,
            named_tool=plan.named_tool,
            id_factory=id_factory,
        )
        self.finish_reason: str | None = None
        self._finished = False
        # `feed` is an instance attribute: the family machine's own chunk-to-deltas function
        # with its fast paths (no call layer in between: a few-character feed is mostly such
        # fixed costs), else the general `_feed`; after finish the class's `feed`, which raises.
        # fast_paths=False: every feed takes the general path (tests compare the two)
        feed: Callable[[str], list[Delta]] = self._feed
        if fast_paths:
            feed = self._machine.fast_feed(self._emitter, feed)
        self.feed = feed  # type: ignore[method-assign,assignment]

    def feed(self, chunk: str) -> list[Delta]:
        """The deltas for the next chunk (each instance binds its own, see `__init__`)."""
        return self._feed(chunk)

    def _feed(self, chunk: str) -> list[Delta]:
        text = chunk
        if self._finished:
            raise RuntimeError("feed() after finish()")
        return feed_in_pieces(self._machine.feed, self._emitter.push, text)

    def finish(self, reason: str = "stop") -> list[Delta]:
        if self._finished:
            return []
        self._finished = True
        # Back to the class's `feed` (it raises now). Not `self.feed = self._feed`: a bound
        # method of the runner kept on it is a reference cycle, and every finished parser would
        # wait for the cyclic collector (a pause every ~20 sidecar requests) instead of being
        # freed when the response is done.
        self.__dict__.pop("feed", None)
        deltas = self._emitter.push(self._machine.finish(reason))
        # `length` stays: a call cut off by it is unterminated, as OpenAI reports it
        self.finish_reason = "tool_calls" if self._emitter.calls and reason != "length" else reason
        return deltas
