"""Qwen3 Hermes-style calls: `<tool_call>` {"name": N, "arguments": {...}} `</tool_call>`."""

from __future__ import annotations

import json
import re

from parsers.families.base import (
    BatchCall,
    CallContext,
    CallScanner,
    Event,
    ScanStep,
    ToolGrammar,
)
from parsers.guided import JsonCallObject
from parsers.scan import MarkerSet

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_CLOSE_SET = MarkerSet((CLOSE,))
_WS = " \t\r\n"

# The batch grammar's call shape: a complete call in the common shape (`{"name": "...",
# "arguments": {...}}`, no backslash, no blank before a key's colon, then `</tool_call>`), read
# with one regex and one C-level `raw_decode`; its arguments are the object exactly as written,
# which is what `JsonCallObject` gives for it. Anything else (escapes, other keys or order,
# NaN/Infinity, a cut-off call) is the scanner's.
_B = "[ \t\r\n]*"  # JSON blanks
_WHOLE_HEAD = re.compile(
    rf'{_B}\{{{_B}"name"{_B}:{_B}"([^"\\\x00-\x1f]*)"{_B},{_B}"arguments"{_B}:{_B}(?=\{{)'
)
_WHOLE_TAIL = re.compile(rf"{_B}\}}{_B}</tool_call>")
# With no backslash every `"` delimits a string, so this finds blanks between a key and its
# colon, which the reader moves after the colon: such arguments are not kept as written.
_KEY_BLANK_COLON = re.compile(r'"[ \t\r\n]+:')


def _no_constant(name: str) -> object:
    raise ValueError(name)  # NaN/Infinity: the reader rejects them


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _whole(text: str, pos: int) -> tuple[str, str, int] | None:
    """(name, arguments, offset after `</tool_call>`) of the complete call at `pos` of `text`
    (after `<tool_call>`), or None when it is not in the common shape."""
    head = _WHOLE_HEAD.match(text, pos)
    if head is None or not head.group(1).strip():  # a blank name: not a call
        return None
    start = head.end()
    close = text.find(CLOSE, start)
    if close == -1:
        return None
    if text.find("\\", start, close) != -1 or _KEY_BLANK_COLON.search(text, start, close):
        return None
    try:
        _, end = _DECODER.raw_decode(text, start)
    except ValueError:
        return None
    tail = _WHOLE_TAIL.match(text, end)
    if tail is None or tail.end() != close + len(CLOSE):
        return None
    return head.group(1), text[start:end], tail.end()


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
        # After the object: its blanks (pieces, joined once: rescanning a long run of them
        # with each chunk was quadratic) and a possible closer prefix after them
        self._blanks: list[str] = []
        self._partial = ""

    def _force(self, events: list[Event]) -> None:
        events.extend(self._obj.force_close(OPEN + "".join(self._fed)))

    def stream(self, text: str) -> str | None:
        if self._after:
            return None
        fragment = self._obj.string_run(text)
        if fragment is not None:
            self._fed.append(text)
        return fragment

    def feed(self, text: str) -> ScanStep:
        self._fed.append(text)
        events: list[Event] = []
        i = 0
        if not self._after:
            ev, i = self._obj.feed(text)
            events.extend(ev)
            if self._obj.error is not None:
                if not self._obj.committed:
                    return ScanStep([], "reject", "".join(self._fed))
                self._force(events)
                return ScanStep(events, "done", text[i:])
            if not self._obj.done:
                return ScanStep(events)
            self._after = True
        data = text[i:]
        if self._partial:
            rest = self._partial + data
        else:
            rest = data.lstrip(_WS)
            self._blanks.append(data[: len(data) - len(rest)])
        if rest.startswith(CLOSE):
            return ScanStep(events, "done", rest[len(CLOSE) :])
        if rest and not _CLOSE_SET.is_partial(rest):
            # no closer: the whitespace after the call stays content (lossless)
            return ScanStep(events, "done", "".join(self._blanks) + rest)
        self._partial = rest
        return ScanStep(events)

    def finish(self) -> ScanStep:
        if self._after:
            # blanks after the object at the end of output: the runner's blank rule decides
            return ScanStep([], "done", "".join(self._blanks) + self._partial)
        if not self._obj.committed:
            return ScanStep([], "reject", "".join(self._fed))
        events: list[Event] = []
        self._force(events)
        return ScanStep(events, "done")


class HermesGrammar(ToolGrammar):
    name = "hermes"
    start_markers = (OPEN,)
    stray_markers = ("</tool_call>", "<|im_end|>")

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return (CLOSE,)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return HermesScanner()

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # the call shape above; anything else (escapes, cut-off, ...) is the runner's
        found = _whole(text, pos)
        return None if found is None else ([(None, found[0], found[1])], found[2])
