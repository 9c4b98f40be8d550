"""Key/value (XML-style) arguments -> canonical JSON, streamed (Qwen3-Coder, GLM, DSML).

`ArgsJson` writes the object punctuation; `StringValue` streams one string value (trimming,
entity decoding, JSON escaping, holding back only what may still change); `RawValue` (a
`CollectedValue`) collects a non-string value and converts it once complete. `TagBuffer` is
the small text buffer the tag-driven scanners share: find the next of some tags, hold back a
possible tag prefix.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any, Literal

from parsers.families.base import CallArgs, CallBegin, CallEnd, Event
from parsers.jsonstream import dumps, escape_text
from parsers.scan import MarkerSet

Trim = Literal["none", "one_newline", "newlines", "blanks"]
_BLANKS = " \t\r\n"
_ENTITY_TAIL = re.compile(r"&[#A-Za-z0-9]{0,31}\Z")


def _lead(text: str, trim: Trim) -> str:
    if trim == "one_newline":
        return text[1:] if text.startswith("\n") else text
    if trim == "newlines":
        return text.lstrip("\r\n")
    if trim == "blanks":
        return text.lstrip(_BLANKS)
    return text


def _trail(text: str, trim: Trim) -> str:
    if trim == "one_newline":
        return text[:-1] if text.endswith("\n") else text
    if trim == "newlines":
        return text.rstrip("\r\n")
    if trim == "blanks":
        return text.rstrip(_BLANKS)
    return text


# the characters `_trail` may remove at the end of a value, per trim
_TRIMMED: dict[Trim, str] = {
    "none": "",
    "one_newline": "\n",
    "newlines": "\r\n",
    "blanks": _BLANKS,
}


def _trail_hold(text: str, trim: Trim) -> int:
    """Index from which trailing characters may still be trimmed."""
    n = len(text)
    if trim == "one_newline":
        return n - 1 if text.endswith("\n") else n
    chars = "\r\n" if trim == "newlines" else _BLANKS if trim == "blanks" else ""
    return len(text.rstrip(chars)) if chars else n  # (not a loop: the run may be long)


def decode_entities(text: str) -> str:
    return html.unescape(text) if "&" in text else text


class ArgsJson:
    """The punctuation of an arguments object written key by key."""

    def __init__(self) -> None:
        self.count = 0

    def key(self, key: str) -> str:
        """`{"key":` for the first key, `,"key":` afterwards (the `{` went out with open())."""
        sep = "," if self.count else ""
        self.count += 1
        return sep + dumps(key) + ":"

    @staticmethod
    def open() -> str:
        return "{"

    @staticmethod
    def close() -> str:
        return "}"


class StringValue:
    """Streams one string value as JSON text, `prefix` (`,"key":`) first.

    Leading/trailing trimming per `trim`; HTML/XML entities decoded when `entities`; with
    `null_word`, a value that is exactly `null` (any case) becomes JSON null, so text that
    may still be that word is held back; `none_word` also takes `None` (a nullable value as
    Python-rendering templates write it).
    """

    __slots__ = ("_entities", "_lead_done", "_null", "_pending", "_prefix", "_started", "_trim")

    def __init__(
        self,
        prefix: str,
        *,
        trim: Trim,
        entities: bool = False,
        null_word: bool = False,
        none_word: bool = False,
    ) -> None:
        self._prefix = prefix
        self._trim = trim
        self._entities = entities
        self._null: tuple[str, ...] = (
            ("null", "none") if none_word else ("null",) if null_word else ()
        )
        self._pending = ""
        self._lead_done = trim == "none"
        self._started = False

    def _open(self) -> str:
        if self._started:
            return ""
        self._started = True
        return self._prefix + '"'

    def feed(self, raw: str) -> str:
        if (
            self._started
            and not self._pending
            and raw
            and raw[-1] not in _TRIMMED[self._trim]
            and not (self._entities and "&" in raw)
        ):
            return escape_text(raw)  # streaming: nothing to trim, hold back or decode
        text = self._pending + raw
        self._pending = ""
        if not text:
            return ""
        if not self._lead_done:
            if self._trim == "one_newline":
                text = _lead(text, self._trim)
                self._lead_done = True
            else:
                text = _lead(text, self._trim)
                if not text:
                    return ""
                self._lead_done = True
        hold = _trail_hold(text, self._trim)
        if self._entities:
            m = _ENTITY_TAIL.search(text, 0, hold) if "&" in text else None
            if m is not None and m.end() == hold:
                hold = m.start()
        if self._null and not self._started:
            head = text[:hold].lower()
            if any(w.startswith(head) for w in self._null):
                hold = 0
        self._pending = text[hold:]
        out = text[:hold]
        if not out:
            return ""
        return self._open() + escape_text(decode_entities(out) if self._entities else out)

    def end(self) -> str:
        text = _trail(self._pending, self._trim)
        self._pending = ""
        if not self._lead_done:
            text = _lead(text, self._trim)
        if self._null and not self._started and text.lower() in self._null:
            self._started = True
            return self._prefix + "null"
        body = decode_entities(text) if self._entities else text
        return self._open() + escape_text(body) + '"'

    def force_end(self) -> str:
        """End of output inside the value: what arrived is the value."""
        return self.end()


class CollectedValue:
    """A value written only once complete: `feed` collects the raw text (writing nothing),
    `end` (subclasses) writes it from `collected()`; at the end of output what arrived is
    the value."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[str] = []

    def feed(self, raw: str) -> str:
        if raw:
            self._parts.append(raw)
        return ""

    def collected(self) -> str:
        return "".join(self._parts)

    def end(self) -> str:
        raise NotImplementedError

    def force_end(self) -> str:
        return self.end()


class RawValue(CollectedValue):
    """Collects a non-string value; `end` converts it with `convert` and writes it."""

    __slots__ = ("_convert", "_entities", "_prefix", "_trim")

    def __init__(
        self,
        prefix: str,
        convert: Callable[[str], Any],
        *,
        trim: Trim,
        entities: bool = False,
    ) -> None:
        super().__init__()
        self._prefix = prefix
        self._convert = convert
        self._trim = trim
        self._entities = entities

    def end(self) -> str:
        text = _trail(_lead(self.collected(), self._trim), self._trim)
        if self._entities:
            text = decode_entities(text)
        return self._prefix + dumps(self._convert(text))


ValueSink = StringValue | RawValue


def begin_call(events: list[Event], name: str) -> None:
    """A key/value call goes out: its name, then the `{` of its arguments."""
    events.append(CallBegin(name))
    events.append(CallArgs(ArgsJson.open()))


def end_call(
    events: list[Event],
    sink: StringValue | CollectedValue | None = None,
    *,
    complete: bool = True,
    raw: str = "",
) -> None:
    """Close a key/value call: the open value `sink` (if any) ends with what it has, then the
    `}`; `raw` is the call's text for a force-closed (`complete=False`) call, which is never
    repaired: its arguments stay what was streamed (docs/parsers.md "Cut-off calls")."""
    if not complete:
        events.append(CallEnd(False, raw))
        return
    if sink is not None:
        events.append(CallArgs(sink.force_end()))
    events.append(CallArgs(ArgsJson.close()))
    events.append(CallEnd(complete, raw))


class TagBuffer:
    """Unconsumed text of a tag-driven scanner, with the tag search it needs."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""

    def add(self, chunk: str) -> None:
        self.text = self.text + chunk if self.text else chunk

    def skip_blanks(self) -> bool:
        """Drop leading blanks; True if something else follows."""
        stripped = self.text.lstrip(_BLANKS)
        self.text = stripped
        return bool(stripped)

    def starts_after_blanks(self, tags: MarkerSet) -> tuple[int, str | Literal[False] | None]:
        """Like `starts`, looking past leading blanks without consuming them: (number of
        blanks, tag/None/False); None also when only blanks are buffered."""
        stripped = self.text.lstrip(_BLANKS)
        blanks = len(self.text) - len(stripped)
        if not stripped:
            return blanks, None
        return blanks, tags.starts_at(stripped)

    def rest(self) -> str:
        out, self.text = self.text, ""
        return out

    def take(self, n: int) -> str:
        out, self.text = self.text[:n], self.text[n:]
        return out

    def starts(self, tags: MarkerSet) -> str | Literal[False] | None:
        """The tag the buffer starts with; None if it may still become one; False if not."""
        return tags.starts_at(self.text)

    def until(self, tags: MarkerSet, final: bool) -> tuple[str, str | None]:
        """Text before the first tag (consumed) and the tag (left in the buffer), or the safe
        text so far and None (a possible tag prefix stays buffered unless `final`)."""
        m = tags.search(self.text)
        if m is not None:
            before = self.text[: m.start()]
            self.text = self.text[m.start() :]
            return before, m.group()
        hold = len(self.text) if final else tags.holdback(self.text)
        before, self.text = self.text[:hold], self.text[hold:]
        return before, None
