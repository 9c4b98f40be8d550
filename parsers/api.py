"""The public parsing API: `parse`, `StreamParser`, `stream`.

Each call builds deployment settings from the parser names (`policy.settings_for`), a request
mapping from the keyword arguments, and lets the request policy (`policy.plan_request`) decide
the route and everything else; the runner then only follows that plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from parsers.batch import parse_batch
from parsers.ids import IdFactory, new_call_id
from parsers.plan import ParsePlan
from parsers.policy import plan_request, settings_for
from parsers.registry import REASONING_PARSERS
from parsers.runner import Runner
from parsers.scan import MarkerSet, QuoteTracker
from parsers.types import Delta, ParsedMessage, ToolCall


def make_plan(
    *,
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    generation: int | None = None,
    thinking: bool | Mapping[str, Any] | None = None,
    prompt: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> ParsePlan:
    """The plan `parse`/`StreamParser` follow. `request` adds other request fields
    (`reasoning_effort`, `chat_template_kwargs`, `response_format`, ...)."""
    settings = settings_for(tool_parser, reasoning_parser, generation)
    req: dict[str, Any] = dict(request or {})
    if tools is not None:
        req["tools"] = list(tools)
    if tool_choice is not None:
        req["tool_choice"] = tool_choice
    if thinking is not None:
        req["thinking"] = thinking
    return plan_request(settings, req, prompt)


class StreamParser:
    """Incremental parser for one response: `feed(chunk)` and `finish()` return deltas."""

    def __init__(
        self,
        *,
        tool_parser: str | None = None,
        reasoning_parser: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        generation: int | None = None,
        thinking: bool | Mapping[str, Any] | None = None,
        prompt: str | None = None,
        request: Mapping[str, Any] | None = None,
        plan: ParsePlan | None = None,
        id_factory: IdFactory = new_call_id,
    ) -> None:
        if plan is None:
            plan = make_plan(
                tool_parser=tool_parser,
                reasoning_parser=reasoning_parser,
                tools=tools,
                tool_choice=tool_choice,
                generation=generation,
                thinking=thinking,
                prompt=prompt,
                request=request,
            )
        self.plan = plan
        self._runner = Runner(plan, id_factory=id_factory)
        # the runner's per-chunk function itself: no call layer per chunk (see Runner)
        self.feed = self._runner.feed  # type: ignore[method-assign]

    @property
    def route(self) -> str:
        return self.plan.route

    @property
    def finish_reason(self) -> str | None:
        """None until `finish`; then `tool_calls` when any call was emitted, else the reason."""
        return self._runner.finish_reason

    def feed(self, chunk: str) -> list[Delta]:
        """The deltas for the next chunk (each instance binds the runner's, see `__init__`)."""
        return self._runner.feed(chunk)

    def finish(self, reason: str = "stop") -> list[Delta]:
        try:
            return self._runner.finish(reason)
        finally:
            self.feed = self._runner.feed  # type: ignore[method-assign]  # it raises now


class Aggregate:
    """Collects deltas into a `ParsedMessage` (what a non-streaming client would receive)."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[str]] = {}
        self.heads: dict[int, tuple[str, str]] = {}

    def add(self, deltas: Iterable[Delta]) -> None:
        for d in deltas:
            if d.content:
                self.content.append(d.content)
            if d.reasoning_content:
                self.reasoning.append(d.reasoning_content)
            for c in d.tool_calls:
                if c.id is not None or c.name is not None:
                    self.heads[c.index] = (c.id or "", c.name or "")
                self.calls.setdefault(c.index, [])
                if c.arguments:
                    self.calls[c.index].append(c.arguments)

    def message(self, finish_reason: str | None, route: Any) -> ParsedMessage:
        calls = [
            # a cut-off call's arguments are what was streamed, possibly nothing (never repaired)
            ToolCall(self.heads[i][0], self.heads[i][1], "".join(self.calls[i]))
            for i in sorted(self.calls)
        ]
        return ParsedMessage(
            content="".join(self.content) or None,
            reasoning_content="".join(self.reasoning) or None,
            tool_calls=calls,
            finish_reason=finish_reason,
            route=route,
        )


def stream(chunks: Iterable[str], *, finish_reason: str = "stop", **kwargs: Any) -> ParsedMessage:
    """Feed `chunks` to a `StreamParser` (same keyword arguments) and aggregate the deltas."""
    return _aggregate(StreamParser(**kwargs), chunks, finish_reason)


def _aggregate(parser: StreamParser, chunks: Iterable[str], finish_reason: str) -> ParsedMessage:
    """Feed `chunks` to `parser`, finish it, and aggregate the deltas."""
    agg = Aggregate()
    for chunk in chunks:
        agg.add(parser.feed(chunk))
    agg.add(parser.finish(finish_reason))
    return agg.message(parser.finish_reason, parser.route)


def parse(
    text: str,
    *,
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    generation: int | None = None,
    thinking: bool | Mapping[str, Any] | None = None,
    prompt: str | None = None,
    finish_reason: str = "stop",
    request: Mapping[str, Any] | None = None,
    id_factory: IdFactory = new_call_id,
) -> ParsedMessage:
    """Parse a whole response (batch): `parse_text`, the whole-output batch path or the same
    runner fed once, so batch equals streaming.

    One batch-only rule (parsers.md, DeepSeek V4.1; `Family.leading_close_means_reasoning`):
    without prefill information, a leading unquoted close marker with no opener means the text
    before it was reasoning.
    """
    plan = make_plan(
        tool_parser=tool_parser,
        reasoning_parser=reasoning_parser,
        tools=tools,
        tool_choice=tool_choice,
        generation=generation,
        thinking=thinking,
        prompt=prompt,
        request=request,
    )
    markers = _leading_close_markers(plan.reasoning_parser)
    if (
        markers is not None
        and plan.reasoning
        and not plan.start_in_reasoning
        and prompt is None
        and _leading_close(text, markers)
    ):
        plan = replace(plan, start_in_reasoning=True)
    return parse_text(plan, text, finish_reason, id_factory)


def parse_text(
    plan: ParsePlan,
    text: str,
    finish_reason: str = "stop",
    id_factory: IdFactory = new_call_id,
    parser: StreamParser | None = None,
) -> ParsedMessage:
    """The message for the whole output `text` under `plan` (`parse` and the sidecar's
    non-streamed responses): the whole-output batch path (`parsers.batch`) where it decides,
    else the runner fed once (`parser`: a fresh one built beforehand, else a new one)."""
    found = parse_batch(plan, text, finish_reason, id_factory)
    if found is not None:
        return found
    if parser is None:
        parser = StreamParser(plan=plan, id_factory=id_factory)
    return _aggregate(parser, (text,), finish_reason)


def _leading_close_markers(reasoning_parser: str | None) -> tuple[str, str] | None:
    """The (open, close) markers of a family with the leading-close batch rule, else None."""
    found = REASONING_PARSERS.get(reasoning_parser or "")
    if found is None or not found.family.leading_close_means_reasoning:
        return None
    return found.family.reasoning_markers


def _leading_close(text: str, markers: tuple[str, str]) -> bool:
    """The first unquoted open/close marker in `text` is the closer."""
    quotes = QuoteTracker()
    pos = 0
    found = MarkerSet(markers)
    while (m := found.search(text, pos)) is not None:
        quotes.feed(text[pos : m.start()])
        if not quotes.quoted(m.group()[0]):
            return m.group() == markers[1]
        quotes.feed(m.group())
        pos = m.end()
    return False
