"""Qwen3 Hermes-style calls: `<tool_call>` {"name": N, "arguments": {...}} `</tool_call>`."""

from __future__ import annotations

from parsers.families.base import (
    CallContext,
    CallScanner,
    Event,
    ScanResult,
    ToolGrammar,
)
from parsers.guided import JsonCallObject
from parsers.scan import MarkerSet

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_CLOSE_SET = MarkerSet((CLOSE,))
_WS = " \t\r\n"


class HermesScanner(CallScanner):
    """Reads `{...}` then optional whitespace and `</tool_call>`.

    Before the name is known, anything that is not a call object rejects the region (the
    opener was prose). After the object, text other than the closer ends the region and goes
    back to content; a missing closer at the end of output is tolerated.
    """

    def __init__(self) -> None:
        self._obj = JsonCallObject()
        self._fed: list[str] = []
        self._after = False  # the object is complete; expecting `</tool_call>`
        self._tail = ""  # after the object: whitespace and a possible closer prefix

    def _force(self, events: list[Event]) -> None:
        events.extend(self._obj.force_close(OPEN + "".join(self._fed)))

    def stream(self, text: str) -> str | None:
        if self._after:
            return None
        fragment = self._obj.string_run(text)
        if fragment is not None:
            self._fed.append(text)
        return fragment

    def feed(self, text: str) -> ScanResult:
        self._fed.append(text)
        events: list[Event] = []
        i = 0
        if not self._after:
            ev, i = self._obj.feed(text)
            events.extend(ev)
            if self._obj.error is not None:
                if not self._obj.committed:
                    return ScanResult([], "reject", "".join(self._fed))
                self._force(events)
                return ScanResult(events, "done", text[i:])
            if not self._obj.done:
                return ScanResult(events)
            self._after = True
        data = self._tail + text[i:]
        j = 0
        while j < len(data) and data[j] in _WS:
            j += 1
        rest = data[j:]
        if rest.startswith(CLOSE):
            return ScanResult(events, "done", rest[len(CLOSE) :])
        if rest and not _CLOSE_SET.is_partial(rest):
            # no closer: the whitespace after the call stays content (lossless)
            return ScanResult(events, "done", data)
        self._tail = data
        return ScanResult(events)

    def finish(self) -> ScanResult:
        if self._after:
            # blanks after the object at the end of output: the engine's blank rule decides
            return ScanResult([], "done", self._tail)
        if not self._obj.committed:
            return ScanResult([], "reject", "".join(self._fed))
        events: list[Event] = []
        self._force(events)
        return ScanResult(events, "done")


class HermesGrammar(ToolGrammar):
    name = "hermes"
    start_markers = (OPEN,)
    stray_markers = ("</tool_call>", "<|im_end|>")

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return (CLOSE,)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return HermesScanner()
