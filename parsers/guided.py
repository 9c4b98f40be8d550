"""JSON call objects and guided-JSON output of forced tool choices (docs/parser-selection.md).

`JsonCallObject` reads `{"name": N, "arguments"|"parameters": ARGS}` incrementally (Hermes
calls and the `required` guided array use it). `GuidedScanner` is a `CallScanner` for the whole
answer of a forced choice: `required` -> an array of call objects (or one object); named ->
the bare arguments object of that tool.
"""

from __future__ import annotations

from parsers.families.base import CallArgs, CallBegin, CallEnd, CallScanner, Event, ScanStep
from parsers.jsonstream import JsonValueReader, canonical_json, dumps

_WS = " \t\r\n"
ARG_KEYS = ("arguments", "parameters")


def decode_string_arguments(value: str) -> str:
    """Arguments given as a JSON-encoded string are decoded once (Hermes) when the string
    holds a JSON object/array; any other string stays a JSON string (`"hello"`), so
    `arguments` is always valid JSON (as vLLM's Hermes parser does)."""
    canon = canonical_json(value)
    if canon is not None and canon.lstrip()[:1] in ("{", "["):
        return canon
    return dumps(value)


class JsonCallObject:
    """Incremental reader of one `{"name": ..., "arguments": ...}` object.

    Events: CallBegin once the name string is complete (arguments seen before the name are
    held until then), then CallArgs. Object arguments stream; other argument values are held
    until complete: a JSON-encoded string is decoded once, null means `{}`. `committed` tells
    whether any event went out (before that, an error means "not a call").
    """

    __slots__ = (
        "_args_done",
        "_args_held",
        "_args_reader",
        "_args_stream",
        "_held_parts",
        "_key",
        "_reader",
        "_state",
        "committed",
        "done",
        "error",
        "name",
    )

    def __init__(self) -> None:
        self._state = "open"  # open, key, colon, value, comma
        self._reader: JsonValueReader | None = None
        self._key = ""
        self._args_reader: JsonValueReader | None = None
        self._args_stream = False
        self._args_held: str | None = None  # canonical arguments waiting for the name
        # pieces read after `_args_held`, joined when it is read (`+=` per chunk copied all
        # of it: a long held array streamed was quadratic)
        self._held_parts: list[str] = []
        self._args_done = False
        self.name: str | None = None
        self.committed = False
        self.done = False
        self.error: str | None = None

    def _held(self) -> str | None:
        """`_args_held` with the pieces read since."""
        if self._held_parts:
            self._args_held = (self._args_held or "") + "".join(self._held_parts)
            self._held_parts = []
        return self._args_held

    def _begin(self, events: list[Event]) -> None:
        assert self.name is not None
        events.append(CallBegin(self.name))
        self.committed = True
        held = self._held()
        if held is not None:
            events.append(CallArgs(held))
            self._args_held = None

    @staticmethod
    def _finish_args(canon: str, reader: JsonValueReader) -> str:
        if reader.first == '"':
            return decode_string_arguments(reader.string_value or "")
        if canon == "null":
            return "{}"
        return canon

    def string_run(self, text: str) -> str | None:
        """Streaming fast path: inside a string of streamed (object) arguments, what `feed`
        does with a chunk that is all string text, and its argument fragment; else None,
        having changed nothing."""
        r = self._reader
        if (
            r is None
            or r is not self._args_reader
            or not self._args_stream
            or self._state != "value"
            or self.done
            or self.error is not None
        ):
            return None
        return r.string_run(text)

    def feed(self, text: str, pos: int = 0) -> tuple[list[Event], int]:
        events: list[Event] = []
        n = len(text)
        i = pos
        while i < n and not self.done and self.error is None:
            st = self._state
            if st == "value":
                r = self._reader
                assert r is not None
                out, i = r.feed(text, i)
                if self._key in ARG_KEYS and self._args_reader is r:
                    if not self._args_stream and r.first:
                        # object arguments stream once the name is known; others are held
                        self._args_stream = r.first == "{" and self.name is not None
                    if self._args_stream and out:
                        events.append(CallArgs(out))
                    elif not self._args_stream:
                        self._held_parts.append(out)
                if r.error is not None:
                    self.error = r.error
                    break
                if not r.done:
                    continue
                if self._key == "name":
                    if r.first != '"' or self.name is not None:
                        self.error = "call name is not a string"
                        break
                    self.name = r.string_value or ""
                    if not self.name.strip():
                        self.error = "empty call name"  # not a call (docs/parsers.md)
                        break
                    self._begin(events)
                elif self._key in ARG_KEYS and self._args_reader is r:
                    self._args_done = True
                    if not self._args_stream:
                        held = self._finish_args(self._held() or "", r)
                        if self.name is not None:
                            events.append(CallArgs(held))
                            self._args_held = None
                        else:
                            self._args_held = held
                self._reader = None
                self._state = "comma"
                continue
            if st == "keyread":
                r = self._reader
                assert r is not None
                _, i = r.feed(text, i)
                if r.error is not None:
                    self.error = r.error
                    break
                if r.done:
                    self._key = r.string_value or ""
                    self._state = "colon"
                continue
            c = text[i]
            if c in _WS:
                i += 1
                continue
            if st == "open":
                if c != "{":
                    self.error = "a call object starts with '{'"
                    break
                i += 1
                self._state = "key1"
            elif st in ("key", "key1"):
                if c == "}" and st == "key1":
                    i += 1
                    self._close(events)
                    continue
                if c != '"':
                    self.error = "expected a key"
                    break
                self._reader = JsonValueReader(keep_strings=True)
                self._state = "keyread"
            elif st == "colon":
                if c != ":":
                    self.error = "expected ':'"
                    break
                i += 1
                # arguments keep the model's spacing (`{"a": 1}` stays as written)
                r = JsonValueReader(keep_strings=True, keep_space=self._key in ARG_KEYS)
                self._reader = r
                if self._key in ARG_KEYS and self._args_reader is None:
                    self._args_reader = r
                self._state = "value"
            elif st == "comma":
                if c == ",":
                    i += 1
                    self._state = "key"
                elif c == "}":
                    i += 1
                    self._close(events)
                else:
                    self.error = "expected ',' or '}'"
                    break
        return events, i

    def _close(self, events: list[Event]) -> None:
        if self.name is None:
            self.error = "call object without a name"
            return
        if self._args_reader is None:
            events.append(CallArgs("{}"))
        elif not self._args_done:
            self.error = "unfinished arguments"
            return
        events.append(CallEnd())
        self.done = True

    def force_close(self, raw: str = "") -> list[Event]:
        """End of output or malformed input after the call went out: close what was sent.

        `raw` is the call's markup as written, for V1 to return as content.
        """
        if not self.committed:
            return []
        # never repaired: the arguments stay what was streamed (docs/parsers.md)
        return [CallEnd(complete=False, raw=raw)]


class GuidedScanner(CallScanner):
    """Guided JSON of a forced tool choice; `start` is "" (the runner saw the first char)."""

    def __init__(self, named_tool: str | None) -> None:
        self._named = named_tool
        self._fed: list[str] = []
        self._state = "start"  # start, array, elem, sep, args, object, after
        self._obj: JsonCallObject | None = None
        self._args: JsonValueReader | None = None
        self._committed = False
        self._ncalls = 0
        self._seen = 0  # characters fed so far
        self._call_from = 0  # where the open call's text starts (its raw text, for V1)

    def _reject_or_close(self, text: str, i: int, events: list[Event]) -> ScanStep:
        if not self._committed and not events:
            return ScanStep([], "reject", "".join(self._fed))
        events.extend(self._close_open(self._seen - len(text) + i))
        return ScanStep(events, "done", text[i:])

    def _close_open(self, upto: int) -> list[Event]:
        """End the open call, cut off at `upto` (never repaired); its raw text goes with it,
        so V1, which sent nothing yet, returns it as content (lossless)."""
        raw = "".join(self._fed)[self._call_from : upto]
        if self._obj is not None and not self._obj.done:
            ev = self._obj.force_close(raw)
            self._obj = None
            return ev
        if self._args is not None and not self._args.done:
            self._args = None
            return [CallEnd(False, raw)]
        return []

    def feed(self, text: str) -> ScanStep:
        base = self._seen
        self._seen += len(text)
        self._fed.append(text)
        events: list[Event] = []
        i = 0
        n = len(text)
        while i < n:
            st = self._state
            if st == "args":
                assert self._args is not None
                out, i = self._args.feed(text, i)
                if out:
                    events.append(CallArgs(out))
                if self._args.error is not None:
                    return self._reject_or_close(text, i, events)
                if self._args.done:
                    events.append(CallEnd())
                    self._args = None
                    self._state = "after"
                continue
            if st in ("elem", "object"):
                assert self._obj is not None
                ev, i = self._obj.feed(text, i)
                events.extend(ev)
                self._committed = self._committed or self._obj.committed
                if self._obj.error is not None:
                    return self._reject_or_close(text, i, events)
                if self._obj.done:
                    self._obj = None
                    self._ncalls += 1
                    self._state = "sep" if st == "elem" else "after"
                continue
            c = text[i]
            if c in _WS:
                i += 1
                continue
            if st == "start":
                self._call_from = base + i
                if self._named is not None and c == "{":
                    self._args = JsonValueReader(keep_space=True)
                    events.append(CallBegin(self._named))
                    self._committed = True
                    self._state = "args"
                elif c == "[":
                    i += 1
                    self._state = "elem1"
                elif c == "{":
                    self._obj = JsonCallObject()
                    self._state = "object"
                else:
                    return self._reject_or_close(text, i, events)
            elif st in ("elem1", "elem0"):
                if c == "]" and st == "elem1":
                    i += 1
                    self._state = "after"
                    continue
                self._obj = JsonCallObject()
                self._call_from = base + i
                self._state = "elem"
            elif st == "sep":
                if c == ",":
                    i += 1
                    self._state = "elem0"
                elif c == "]":
                    i += 1
                    self._state = "after"
                else:
                    return self._reject_or_close(text, i, events)
            else:  # after: the JSON is over; the rest is content
                return ScanStep(events, "done", text[i:])
        return ScanStep(events)

    def finish(self) -> ScanStep:
        if self._state == "args" and self._args is not None:
            tail = self._args.end()
            if self._args.done:
                return ScanStep([CallArgs(tail), CallEnd()], "done")
        if not self._committed:
            return ScanStep([], "reject", "".join(self._fed))
        return ScanStep(self._close_open(self._seen), "done")
