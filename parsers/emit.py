"""Events -> OpenAI deltas: ids, dense indexes, tool_choice filtering, V1 whole-call delivery.

Shared by every family and both generations, so these request-policy rules live in one place:
* tool_choice `none`: calls are not emitted (their markup was consumed by the parser);
* named tool_choice: calls to any other tool are dropped, indexes stay dense;
* V1 (`whole_calls`): a call goes out as one delta once it ends; a call that did not complete
  goes out as its raw text, as content;
* ids: the native id when the family gives one, else the id factory (`call-<uuid>`).
"""

from __future__ import annotations

from parsers.families.base import CallArgs, CallBegin, CallEnd, Event, Text
from parsers.ids import IdFactory, new_call_id
from parsers.plan import ToolMode
from parsers.types import (
    Delta,
    ToolCallDelta,
    args_delta,
    content_delta,
    make_delta,
    reasoning_delta,
)

_new = object.__new__


class Emitter:
    def __init__(
        self,
        *,
        whole_calls: bool,
        tool_mode: ToolMode = "auto",
        named_tool: str | None = None,
        id_factory: IdFactory = new_call_id,
    ) -> None:
        self._whole = whole_calls
        self._mode = tool_mode
        self._named = named_tool
        self._ids = id_factory
        self.calls = 0  # calls emitted (indexes are 0..calls-1)
        self._open: ToolCallDelta | None = None  # whole_calls: the call being collected
        self._args: list[str] = []
        self._skip = False  # the current call is dropped
        self._in_call = False

    def push(self, events: list[Event]) -> list[Delta]:
        if len(events) == 1:  # the common streaming cases: one prose piece, one fragment
            only = events[0]
            if type(only) is Text:
                if not only.text:
                    return []
                if only.channel == "reasoning":
                    return [reasoning_delta(only.text)]
                return [content_delta(only.text)]
            if type(only) is CallArgs and not self._whole:
                if self._skip or not only.fragment:
                    return []
                return [make_delta(None, None, [args_delta(self.calls - 1, only.fragment)])]
        if not events:
            return []
        out: list[Delta] = []
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCallDelta] = []
        flush = self._flush

        for ev in events:
            if isinstance(ev, Text):
                if not ev.text:
                    continue
                if calls:
                    flush(out, content, reasoning, calls)
                (reasoning if ev.channel == "reasoning" else content).append(ev.text)
            elif isinstance(ev, CallBegin):
                self._in_call = True
                self._skip = self._mode == "none" or (
                    self._mode == "named" and self._named is not None and ev.name != self._named
                )
                if self._skip:
                    continue
                delta = ToolCallDelta(self.calls, ev.id or self._ids(), ev.name, None)
                self.calls += 1
                if self._whole:
                    self._open = delta
                    self._args = []
                else:
                    if content or reasoning:
                        flush(out, content, reasoning, calls)
                    calls.append(delta)
            elif isinstance(ev, CallArgs):
                if self._skip or not ev.fragment:
                    continue
                if self._whole:
                    self._args.append(ev.fragment)
                else:
                    calls.append(args_delta(self.calls - 1, ev.fragment))
            elif isinstance(ev, CallEnd):
                self._in_call = False
                if self._skip:
                    self._skip = False
                    if self._whole and not ev.complete and ev.raw and self._mode == "named":
                        # V1: an unparsed call is text, whoever it was addressed to
                        if calls:
                            flush(out, content, reasoning, calls)
                        content.append(ev.raw)
                    continue
                if self._whole and self._open is not None:
                    opened, self._open = self._open, None
                    if ev.complete:
                        if content or reasoning:
                            flush(out, content, reasoning, calls)
                        args = "".join(self._args)
                        calls.append(
                            ToolCallDelta(opened.index, opened.id, opened.name, args or "{}")
                        )
                    else:
                        self.calls -= 1  # the index was never shown: keep indexes dense
                        if ev.raw:
                            if calls:
                                flush(out, content, reasoning, calls)
                            content.append(ev.raw)
        flush(out, content, reasoning, calls)
        return out

    def args(self, fragment: str) -> list[Delta]:
        """`push([CallArgs(fragment)])`, without the event (the streaming fast path)."""
        if self._skip or not fragment:
            return []
        if self._whole:
            self._args.append(fragment)
            return []
        d = _new(Delta)  # built like types.make_delta/args_delta, inline (per-feed hot path)
        call = _new(ToolCallDelta)
        fields = call.__dict__
        fields["index"] = self.calls - 1
        fields["id"] = None
        fields["name"] = None
        fields["arguments"] = fragment
        fields = d.__dict__
        fields["content"] = None
        fields["reasoning_content"] = None
        fields["tool_calls"] = [call]
        return [d]

    @staticmethod
    def _flush(
        out: list[Delta], content: list[str], reasoning: list[str], calls: list[ToolCallDelta]
    ) -> None:
        """The pieces collected so far become one delta."""
        if content or reasoning or calls:
            out.append(
                make_delta("".join(content) or None, "".join(reasoning) or None, _merge(calls))
            )
            content.clear()
            reasoning.clear()
            calls.clear()


def _merge(calls: list[ToolCallDelta]) -> list[ToolCallDelta]:
    """Join consecutive fragments of the same call into one delta."""
    merged: list[ToolCallDelta] = []
    for c in calls:
        if merged and merged[-1].index == c.index and c.id is None and c.name is None:
            last = merged[-1]
            merged[-1] = ToolCallDelta(
                last.index, last.id, last.name, (last.arguments or "") + (c.arguments or "")
            )
        else:
            merged.append(c)
    return merged
