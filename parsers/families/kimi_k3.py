"""Kimi K3 (`kimi_k3`, tool and reasoning parser): the XTML channel grammar (docs/parsers.md).

    <|open|>think<|sep|>REASONING<|close|>think<|sep|>
    <|open|>response<|sep|>ANSWER<|close|>response<|sep|>
    <|open|>tools<|sep|>
      <|open|>call tool="NAME" index="1"<|sep|>
        <|open|>argument key="K" type="string"<|sep|>VALUE<|close|>argument<|sep|>
      <|close|>call<|sep|>
    <|close|>tools<|sep|>
    <|close|>message<|sep|><|end_of_msg|>

A marker is `<|open|>`/`<|close|>`, a channel name (with `key="value"` attributes when
opening), `<|sep|>`; any whitespace may sit between the parts. Text that only looks like one
(an unknown channel name, no `<|sep|>` within `_MAX_BODY` characters, another token before the
`<|sep|>`) is text.

Where text goes: `think` is reasoning, `response` and plain unwrapped text are content, text
after the message end (`<|close|>message<|sep|>` or `<|end_of_msg|>`) is dropped: it is not
part of the answer. That is the one place output is dropped on purpose. Blank text between
markers outside the response is layout.

Calls: one `call` channel per call (inside `tools`, or bare), id `NAME:(index-1)` (the `index`
attribute is 1-based; a missing or bad index uses the call's position), name complete at its
`<|sep|>`. Arguments come as `argument key type` channels (type `string`, the default, gives the
text as a string; other types the value's canonical JSON when it is JSON, else the string) or as
one `json` channel whose text is the arguments, bytes kept. Attribute values decode `&quot;`
and `&amp;`; a repeated attribute or argument key: the last wins (V2, which streams values as
they arrive, writes both and JSON readers keep the last). A missing close (`argument`, `call`,
`tools`) is implied by the next structural marker; end of output inside a call force-closes it.
A call without a tool name, or an argument channel outside any call, is not a call: its text up
to the call close is content, verbatim (and, like any tool marker, it ends reasoning).

V1 (legacy jail) runs the same machine without quote awareness and jails each tools/call
region: the region goes out when it closes, as parsed calls, or verbatim as content when no
call in it completed. With thinking off, V2 drops the think markers and keeps their text as
content; V1 leaves them as text. Without tool parsing (no tool parser in the plan, or V1 with
tool_choice none) the tool channels are text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from parsers.families.base import (
    PIECE,
    CallArgs,
    CallBegin,
    CallContext,
    CallEnd,
    CallScanner,
    ChannelGrammar,
    Event,
    FamilyMachine,
    Generation,
    ScanStep,
    Text,
)
from parsers.guided import GuidedScanner
from parsers.jsonstream import JsonValueReader, canonical_json, dumps, escape_text
from parsers.plan import ParsePlan
from parsers.scan import QuoteTracker
from parsers.types import Delta, content_delta, reasoning_delta

if TYPE_CHECKING:
    from collections.abc import Callable

    from parsers.emit import Emitter

OPEN = "<|open|>"
CLOSE = "<|close|>"
SEP = "<|sep|>"
EOM = "<|end_of_msg|>"
THINK_OPEN = f"{OPEN}think{SEP}"

_TOKENS = (OPEN, CLOSE, EOM)
_TOKEN_RE = re.compile("|".join(re.escape(t) for t in _TOKENS))
_TOKEN_PREFIXES = frozenset(t[:i] for t in _TOKENS for i in range(1, len(t)))
_MAX_BODY = 1024  # a marker body longer than this is not a marker (bounds the hold-back)
_OPEN_BODY = re.compile(r"\s*([A-Za-z_][\w.-]*)((?:\s.*)?)", re.DOTALL)
_CLOSE_BODY = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*")
_ATTR = re.compile(r'([A-Za-z_][\w.-]*)\s*=\s*"([^"]*)"')
_INDEX = re.compile(r"\s*0*([1-9][0-9]*)\s*")
_TOOL_CHANNELS = frozenset({"tools", "call", "argument", "json"})
_CHANNELS = frozenset({"think", "response", "message"}) | _TOOL_CHANNELS
_WS = " \t\r\n"
_MARKER_HEADS = (OPEN, CLOSE)
_WAIT_LIMIT = len(OPEN) + _MAX_BODY + len(SEP)  # read_marker's limit for the shorter head
_QUOTE_CHARS = re.compile("[\"'`\n]")  # what the quote tracker looks at

State = Literal["top", "think", "response", "tools", "call", "value", "guided", "end"]
_PROSE: frozenset[State] = frozenset({"top", "think", "response"})
# Openers that start reasoning or a tool region in prose (quote-checked under V2).
_REGION_OPENERS = frozenset({"think", "tools", "call", "argument", "json"})


@dataclass(frozen=True, slots=True)
class Marker:
    kind: Literal["open", "close", "eom"]
    name: str
    attrs: dict[str, str]
    raw: str


def decode_attr(value: str) -> str:
    # `&quot;` first: `&amp;quot;` is the escaped text `&quot;`, not a quote.
    return value.replace("&quot;", '"').replace("&amp;", "&")


def parse_attrs(text: str) -> dict[str, str]:
    """`key="value"` pairs, entities decoded; a repeated key: the last wins."""
    return {m.group(1): decode_attr(m.group(2)) for m in _ATTR.finditer(text)}


def read_marker(
    text: str, i: int, final: bool, names: frozenset[str]
) -> Marker | Literal[False] | None:
    """The marker at text[i] (which starts a token); False if it is text; None: undecided."""
    if text.startswith(EOM, i):
        return Marker("eom", "", {}, EOM)
    for token in (OPEN, CLOSE):
        if text.startswith(token, i):
            break
    else:
        return None if (not final and text[i:] in _TOKEN_PREFIXES) else False
    start = i + len(token)
    limit = start + _MAX_BODY + len(SEP)
    sep = text.find(SEP, start, limit)
    other = _TOKEN_RE.search(text, start, sep if sep != -1 else limit)
    if other is not None:
        return False
    if sep == -1:
        return None if (not final and len(text) < limit) else False
    body = text[start:sep]
    raw = text[i : sep + len(SEP)]
    if token == CLOSE:
        m = _CLOSE_BODY.fullmatch(body)
        if m is None or m.group(1) not in names:
            return False
        return Marker("close", m.group(1), {}, raw)
    m = _OPEN_BODY.fullmatch(body)
    if m is None or m.group(1) not in names:
        return False
    return Marker("open", m.group(1), parse_attrs(m.group(2)), raw)


def call_id(name: str, index: str | None, ncalls: int, ids: set[str]) -> str:
    """The id of the response's call number `ncalls` (0-based) from its `index` attribute,
    made unique among `ids` (and added to them)."""
    m = _INDEX.fullmatch(index or "")
    found = f"{name}:{int(m.group(1)) - 1 if m else ncalls}"
    if found in ids:  # ids are unique within a response
        found = f"{name}:{ncalls}"
        k = 1
        while found in ids:
            found, k = f"{name}:{ncalls}.{k}", k + 1
    ids.add(found)
    return found


def _holdback(text: str, start: int) -> int:
    """Index from which text[start:] may still become a token (len(text) if nowhere)."""
    n = len(text)
    for j in range(max(start, n - len(EOM) + 1), n):
        if text[j:] in _TOKEN_PREFIXES:
            return j
    return n


class _Call:
    """Arguments of one call, as events: typed `argument` channels or one `json` channel."""

    def __init__(self, stream: bool, strings: frozenset[str] = frozenset()) -> None:
        self.stream = stream  # V2: fragments as they come; V1: the whole JSON at the end
        self.strings = strings  # keys the tool declares `string`: strings whatever `type` says
        self.raw_parts: list[str] = []  # the call's markup (V1 returns it as content if cut off)
        self.style: Literal["typed", "json"] | None = None
        self.pairs: list[tuple[str, str]] = []  # (key, JSON value) of closed typed arguments
        self.sent: list[str] = []
        self.key = ""
        self.type = "string"
        self.value: list[str] = []  # text of the open argument / json channel
        self.value_open = False
        self.string_open = False  # V2: a string value's opening quote went out
        self.json_reader: JsonValueReader | None = None  # json channel: for closers only

    def style_channel(self) -> str:
        """The channel name whose close ends the open value."""
        return "json" if self.style == "json" else "argument"

    def _send(self, events: list[Event], fragment: str) -> None:
        if fragment:
            self.sent.append(fragment)
            events.append(CallArgs(fragment))

    def _sep(self) -> str:
        return "{" if not self.sent else ","

    def open_value(self, marker: Marker) -> bool:
        """Start an argument or json channel; False if the call cannot take it."""
        if marker.name == "json":
            if self.style is not None:
                return False
            self.style = "json"
            self.json_reader = JsonValueReader()
        else:
            if self.style == "json":
                return False
            self.style = "typed"
            self.key = marker.attrs.get("key", "")
            self.type = marker.attrs.get("type", "string").strip().lower() or "string"
            if self.key in self.strings:
                self.type = "string"  # the schema is the contract (docs/parsers.md)
        self.value = []
        self.value_open = True
        self.string_open = False
        return True

    def value_text(self, text: str, events: list[Event]) -> None:
        if not text:
            return
        self.value.append(text)
        if not self.stream:
            return
        if self.style == "json":
            assert self.json_reader is not None
            if self.json_reader.error is None and not self.json_reader.done:
                self.json_reader.feed(text)
            if not self.sent:
                whole = "".join(self.value)
                if whole.strip(_WS):  # bytes kept, but blank text alone is no arguments
                    self._send(events, whole)
                return
            self._send(events, text)
        elif self.type == "string":
            if not self.string_open:
                self._send(events, f'{self._sep()}{dumps(self.key)}:"')
                self.string_open = True
            self._send(events, escape_text(text))

    def close_value(self, events: list[Event]) -> None:
        """The open argument/json channel ended (its close marker, or an implied one)."""
        if not self.value_open:
            return
        self.value_open = False
        text = "".join(self.value)
        if self.style == "json":
            return  # its text is the arguments (sent as it came, or at the end for V1)
        # string: the text as is; other types: its JSON when it is JSON, else the string
        value = dumps(text) if self.type == "string" else canonical_json(text) or dumps(text)
        self.pairs.append((self.key, value))
        if not self.stream:
            return
        if self.type == "string":
            if not self.string_open:
                self._send(events, f'{self._sep()}{dumps(self.key)}:"')
            self._send(events, '"')
        else:
            self._send(events, f"{self._sep()}{dumps(self.key)}:{value}")

    def finish(self, events: list[Event], complete: bool) -> None:
        """End of the call: complete (its close, or an implied one) or cut off."""
        if complete:
            self.close_value(events)
        if self.style == "json":
            text = "".join(self.value)
            if not self.stream:
                self._send(events, text if text.strip(_WS) else "{}")
            elif not self.sent and complete:
                self._send(events, "{}")
        elif not self.stream:
            # V1: one JSON object; a repeated key keeps its first place and its last value
            merged = dict(self.pairs)
            self._send(events, "{" + ",".join(f"{dumps(k)}:{v}" for k, v in merged.items()) + "}")
        elif not complete:
            pass  # V2, cut off: never repaired, the arguments stay what was streamed
        elif not self.sent:
            self._send(events, "{}")
        else:
            self._send(events, "}")
        events.append(CallEnd(complete, "".join(self.raw_parts)))


class KimiK3Machine(FamilyMachine):
    def __init__(
        self, plan: ParsePlan, generation: Generation, ctx: CallContext | None = None
    ) -> None:
        self._v2 = generation == 2
        self._ctx = ctx if ctx is not None else CallContext()
        tools_on = plan.parse_tools and (self._v2 or plan.tool_mode != "none")
        self._reasoning = plan.reasoning_channel
        names = set(_CHANNELS)
        if not tools_on:
            names -= _TOOL_CHANNELS
        self._names = frozenset(names)
        self._forced = tools_on and plan.tool_mode in ("required", "named")
        self._named = plan.named_tool if plan.tool_mode == "named" else None
        self._state: State = "think" if (self._reasoning and plan.start_in_reasoning) else "top"
        self._quotes = QuoteTracker() if self._v2 else None
        self._buf = ""
        # held blank text of the current layout run (top/tools/call), in pieces: `+=` on an
        # attribute copied the whole run per chunk (quadratic on a long run)
        self._blank: list[str] = []
        self._run_text = False  # the current layout run has visible text: it is content
        self._answer_started = False
        self._call: _Call | None = None
        self._bad: list[str] | None = None  # text of a call without a tool name (content)
        self._call_return: State = "top"  # where a call goes back to when it closes
        self._ids: set[str] = set()
        self._ncalls = 0
        self._guided: CallScanner | None = None
        self._guided_return: State = "top"
        # V1 jail of a tools/call region: its events, and its text for a verbatim release
        self._jail: list[Event] | None = None
        self._jail_raw: list[str] = []
        self._general: Callable[[str], list[Delta]] = self._unbound
        self._args: Callable[[str], list[Delta]] = self._unbound

    # -- public --

    def feed(self, text: str) -> list[Event]:
        out: list[Event] = []
        data, self._buf = self._buf + text, ""
        self._run(data, out, final=False)
        return out

    def finish(self, reason: str = "stop") -> list[Event]:
        # Let go of the runner's feed: kept past the end it makes runner and machine a
        # reference cycle, freed only by the cyclic collector.
        self._general = self._unbound
        out: list[Event] = []
        data, self._buf = self._buf, ""
        self._run(data, out, final=True)
        self._end_of_output(out)
        return out

    def fast_feed(
        self, emitter: Emitter, general: Callable[[str], list[Delta]]
    ) -> Callable[[str], list[Delta]]:
        self._general = general
        self._args = emitter.args
        return self._deltas

    def _deltas(self, chunk: str) -> list[Delta]:
        """`general(chunk)` for the common streaming chunks: text without `<` (no token can
        start in it) inside `think`, `response` or a streaming string argument, with nothing
        held back, goes out directly — what `_run` and `_plain` do with it, without the event
        round trip. (`chunk`: the name `StreamParser.feed` gives its argument.)"""
        text = chunk
        held = self._buf
        if (
            held
            and held.find("<", 1) == -1
            and "<" not in text
            and held.startswith(_MARKER_HEADS)
            and len(held) + len(text) < _WAIT_LIMIT
            and self._state != "end"
            and self._state != "guided"
            and not (self._forced and not self._answer_started)
        ):
            # a marker whose `<|sep|>` has not come yet (`read_marker` says wait): the chunk
            # holds no token start, so it goes on waiting
            self._buf = held + text
            return []
        if (
            not held
            and text
            and "<" not in text
            and len(text) <= PIECE
            and self._jail is None
            and self._bad is None
        ):
            state = self._state
            if state == "value":
                call = self._call
                assert call is not None
                if call.stream and call.string_open and call.style == "typed":
                    # a string argument whose opening quote went out (`value_text`)
                    call.raw_parts.append(text)  # `_consumed`
                    call.value.append(text)
                    fragment = escape_text(text)
                    call.sent.append(fragment)
                    return self._args(fragment)
            elif self._call is None and (
                state == "think"
                or (state == "response" and (self._answer_started or not self._forced))
            ):
                quotes = self._quotes
                if quotes is not None:
                    if quotes.sq_pending or quotes.ticks or _QUOTE_CHARS.search(text):
                        quotes.feed(text)
                    else:
                        quotes.prev = text[-1]  # what feed() does with such text
                if state == "think":
                    return [reasoning_delta(text)]
                self._answer_started = True
                return [content_delta(text)]
        return self._general(text)

    @staticmethod
    def _unbound(text: str) -> list[Delta]:
        raise RuntimeError("_deltas() before fast_feed()")

    # -- output --

    def _out(self, out: list[Event]) -> list[Event]:
        return self._jail if self._jail is not None else out

    def _text(self, out: list[Event], text: str, channel: Literal["content", "reasoning"]) -> None:
        if text:
            self._out(out).append(Text(text, channel))

    def _consumed(self, text: str) -> None:
        """Text read inside a call or a V1 jail, kept for returning it verbatim."""
        if self._jail is not None:
            self._jail_raw.append(text)
        if self._call is not None:
            self._call.raw_parts.append(text)
        elif self._bad is not None:
            self._bad.append(text)

    def _release_jail(self, out: list[Event]) -> None:
        jail, self._jail = self._jail, None
        raw = "".join(self._jail_raw)
        self._jail_raw = []
        if jail is None:
            return
        if any(isinstance(e, CallEnd) and e.complete for e in jail):
            out.extend(jail)
        elif raw:
            out.append(Text(raw))

    def _goto(self, state: State) -> None:
        self._state = state
        self._end_run()
        if self._quotes is not None:
            self._quotes.reset()

    # -- main loop --

    def _run(self, data: str, out: list[Event], final: bool) -> None:
        pos = 0
        n = len(data)
        while pos < n:
            state = self._state
            if state == "end":
                pos = n
                break
            if state == "guided":
                data, pos = self._run_guided(data, pos, out, final)
                n = len(data)
                if self._state == "guided":
                    break
                continue
            if state in ("top", "response") and self._forced and not self._answer_started:
                j = pos
                while j < n and data[j] in _WS:
                    j += 1
                if j == n and not final:
                    break  # only blanks so far: the first real character decides
                if j < n and data[j] != "<":
                    self._answer_started = True
                    if data[j] in "[{":  # guided JSON of a forced choice
                        self._guided = GuidedScanner(self._named)
                        self._guided_return = state
                        self._state = "guided"
                        pos = j
                        continue
            m = _TOKEN_RE.search(data, pos)
            if m is None:
                stop = n if final else _holdback(data, pos)
                self._plain(data[pos:stop], out)
                pos = stop
                break
            i = m.start()
            self._plain(data[pos:i], out)
            pos = i
            marker = read_marker(data, i, final, self._names)
            if marker is None:
                break  # wait for the rest of the marker
            if marker is False or self._quoted(marker):
                # a quoted marker is one opaque token: its attribute quotes are not prose quotes
                step = 1 if marker is False else len(marker.raw)
                self._plain(data[i : i + step], out, track=marker is False)
                pos = i + step
                continue
            pos = i + len(marker.raw)
            self._marker(marker, out)
        self._buf = data[pos:]

    def _quoted(self, marker: Marker) -> bool:
        """V2: an opener of reasoning or of a call inside quotes/code in prose is prose."""
        quotes = self._quotes
        if quotes is None or self._state not in _PROSE or marker.kind != "open":
            return False
        return marker.name in _REGION_OPENERS and quotes.quoted(marker.raw[0])

    def _run_guided(self, data: str, pos: int, out: list[Event], final: bool) -> tuple[str, int]:
        """Feed the guided scanner; (the text to go on with, its position)."""
        scanner = self._guided
        assert scanner is not None
        res = scanner.feed(data[pos:])
        if res.status == "more" and final:
            end = scanner.finish()
            res = ScanStep(res.events + end.events, end.status, end.rest)
        out.extend(res.events)
        if res.status == "more":
            return data, len(data)
        self._guided = None
        self._state = self._guided_return
        if res.status == "done":
            return data, len(data) - len(res.rest)
        # not guided JSON after all: everything since its start is text again, scanned by
        # this same loop (so what it holds back is kept, not overwritten)
        return res.rest, 0

    # -- plain text --

    def _plain(self, text: str, out: list[Event], track: bool = True) -> None:
        """Text that is not a marker, in the current state."""
        if not text:
            return
        state = self._state
        self._consumed(text)
        if state == "think":
            self._prose(text, out, "reasoning", track)
        elif state == "response":
            self._prose(text, out, "content", track)
        elif state == "value":
            assert self._call is not None
            self._call.value_text(text, self._out(out))
        elif self._bad is None and state in ("top", "tools", "call"):
            self._layout(text, out, track)
        # end: dropped

    def _prose(
        self, text: str, out: list[Event], channel: Literal["content", "reasoning"], track: bool
    ) -> None:
        if self._quotes is not None and track:
            self._quotes.feed(text)
        if channel == "content":
            self._answer_started = True
        self._text(out, text, channel)

    def _layout(self, text: str, out: list[Event], track: bool) -> None:
        """Text outside the channels: content, but blank text between markers is layout.

        Outside tools/calls a text run keeps its blanks, except those right before a call
        opener (markup, as for every family); inside, the blanks next to markers go too.
        """
        top = self._state == "top"
        if self._quotes is not None and top and track:
            self._quotes.feed(text)
        if not self._run_text:
            if not text.strip(_WS):
                self._blank.append(text)
                return
            self._run_text = True
            self._answer_started = True
            text = (
                ("".join(self._blank) + text if self._blank else text) if top else text.lstrip(_WS)
            )
            self._blank = []
        body = text.rstrip(_WS)
        if body:
            self._text(out, "".join(self._blank) + body if self._blank else body, "content")
            self._blank = []
        if len(body) < len(text):
            self._blank.append(text[len(body) :])

    def _keep_blank(self, out: list[Event]) -> None:
        """The held blanks after a text run outside the channels are content after all."""
        if self._state == "top" and self._run_text:
            self._text(out, "".join(self._blank), "content")
        self._blank = []

    def _end_run(self) -> None:
        self._blank = []
        self._run_text = False

    # -- markers --

    def _marker(self, mk: Marker, out: list[Event]) -> None:
        if not (mk.kind == "open" and mk.name in ("tools", "call")):
            self._keep_blank(out)
        self._end_run()
        name, kind = mk.name, mk.kind
        if self._bad is not None:
            if kind == "close" and name == "call":
                self._consumed(mk.raw)
                self._text(out, "".join(self._bad), "content")
                self._bad = None
                self._state = self._call_return
                self._leave_region(out)
                return
            if not self._ends_call(mk):
                self._consumed(mk.raw)
                return
            self._text(out, "".join(self._bad), "content")
            self._bad = None
            self._state = self._call_return
            self._leave_region(out)  # (V1: a bare region is over; its jail goes out first)
        if self._state == "value":
            call = self._call
            assert call is not None
            if kind == "close" and name == call.style_channel():
                self._consumed(mk.raw)
                call.close_value(self._out(out))
                self._state = "call"
                return
            call.close_value(self._out(out))  # a missing close, implied by this marker
            self._state = "call"
        if kind == "eom" or (kind == "close" and name == "message"):
            if self._call is not None:
                self._end_call(out, complete=True)
            self._release_jail(out)
            self._goto("end")
            return
        state = self._state
        if state == "call":
            call = self._call
            assert call is not None
            if kind == "open" and name in ("argument", "json") and call.open_value(mk):
                self._consumed(mk.raw)
                self._state = "value"
                return
            if kind == "close" and name == "call":
                self._consumed(mk.raw)
                self._end_call(out, complete=True)
                self._leave_region(out)
                return
            if not self._ends_call(mk):
                # stray inside a call (a second argument style, a close without its open):
                # not part of the arguments, so it is content like other text in the call
                self._plain(mk.raw, out, track=False)
                return
            self._end_call(out, complete=True)  # its close is implied by this marker
            state = self._state
        if state == "tools":
            if kind == "open" and name in ("call", "argument", "json"):
                self._consumed(mk.raw)
                self._begin_call(mk, out, "tools")
                return
            if kind == "close" and name == "tools":
                self._consumed(mk.raw)
                self._goto("top")
                self._release_jail(out)
                return
            if not (kind == "open" and name in ("think", "response")):
                self._consumed(mk.raw)
                return
            self._goto("top")  # the tools channel is left without its close
            self._release_jail(out)
        self._prose_marker(mk, out)

    @staticmethod
    def _ends_call(mk: Marker) -> bool:
        """Markers that end a call whose close is missing (they begin or end something else)."""
        if mk.kind == "open":
            return mk.name in ("call", "tools", "think", "response")
        return mk.kind == "eom" or mk.name in ("tools", "think", "response", "message")

    def _prose_marker(self, mk: Marker, out: list[Event]) -> None:
        name, kind, state = mk.name, mk.kind, self._state
        if kind == "open":
            if name == "think":
                if self._reasoning and state != "think":
                    self._goto("think")
                return  # a repeated opener, or (thinking off) a removed marker
            if name == "response":
                self._goto("response")
                return
            if name in ("tools", "call", "argument", "json"):
                if not self._v2:
                    self._release_jail(out)  # a region still jailed ends here (none is lost)
                    self._jail = []
                    self._jail_raw = []
                self._consumed(mk.raw)
                if name == "tools":
                    self._goto("tools")
                else:
                    self._begin_call(mk, out, "top")
            return  # message: markup
        if name == state and state in ("think", "response"):
            self._goto("top")
        # else: a close without its open (the prompt opened it), or a stray one: markup

    def _leave_region(self, out: list[Event]) -> None:
        if self._state in _PROSE:
            self._release_jail(out)

    def _call_id(self, name: str, index: str | None) -> str:
        return call_id(name, index, self._ncalls, self._ids)

    def _begin_call(self, mk: Marker, out: list[Event], ret: State) -> None:
        self._call_return = ret
        self._goto("call")
        name = mk.attrs.get("tool", "") if mk.name == "call" else ""
        if not name.strip():
            # no tool name, or an argument outside any call: not a call; its text is content
            self._bad = [mk.raw]
            return
        cid = self._call_id(name, mk.attrs.get("index"))
        self._ncalls += 1
        self._out(out).append(CallBegin(name, cid))
        self._call = _Call(self._v2, self._ctx.string_params(name))
        self._call.raw_parts.append(mk.raw)

    def _end_call(self, out: list[Event], *, complete: bool) -> None:
        call = self._call
        assert call is not None
        call.finish(self._out(out), complete)
        self._call = None
        self._goto(self._call_return)

    def _end_of_output(self, out: list[Event]) -> None:
        if self._guided is not None:
            res = self._guided.finish()
            out.extend(res.events)
            self._guided = None
            if res.status == "reject":
                self._state = self._guided_return
                self._answer_started = True
                self._run(res.rest, out, final=True)
        if self._bad is not None:
            self._text(out, "".join(self._bad), "content")
            self._bad = None
        if self._call is not None:
            self._end_call(out, complete=False)
        self._release_jail(out)
        self._keep_blank(out)
        self._end_run()


# --- whole-output batch grammar (parsers.batch) ---
# The common shape of a whole V2 output, read with regexes for the markers as models write
# them (no blanks inside a marker, `key` then `type`, `tool` then `index`); any other shape
# returns None and the runner parses it. Exact by these arguments: prose (think/response) is
# taken up to the canonical close of its channel, and every token in it must be one that
# `read_marker` calls text (a real marker there: None); a close marker is never quote-checked;
# the openers taken at the top level (think, tools, call) come after a channel change (the
# quote tracker reset) and blanks only; a value is the text up to the next token, which must
# be its channel's close; blank text between markers outside the channels is layout. Every
# repeat is followed by a token its body cannot hold, so a failed match gives each character
# back once: linear without possessive quantifiers (see `parsers.atomic` for why there are none).

_B_TEXT = r"[^<]*(?:<(?!\|(?:open|close|end_of_msg)\|>)[^<]*)*"  # up to the next token
_B_TOP = re.compile(
    r"[ \t\r\n]*(?:(?P<eof>\Z)|(?P<stop><\|close\|>message<\|sep\|>|<\|end_of_msg\|>)"
    r"|<\|open\|>(?:(?P<thought>think)|(?P<response>response)|(?P<tools>tools))<\|sep\|>"
    r"|(?P<call>(?=<\|open\|>call )))"
)
_B_TOOLS = re.compile(
    r"[ \t\r\n]*(?:(?P<close><\|close\|>tools<\|sep\|>)"
    r"|(?P<stop><\|close\|>message<\|sep\|>|<\|end_of_msg\|>)|(?P<call>(?=<\|open\|>call )))"
)
# attribute values: no `<` (a token there makes the marker text) and short (`_MAX_BODY`)
_B_CALL = re.compile(r'<\|open\|>call tool="([^"<]{0,400})"(?: index="([^"<]{0,100})")?<\|sep\|>')
_B_ARG = re.compile(
    r'[ \t\r\n]*<\|open\|>(?:argument key="([^"<]{0,400})"(?: type="([^"<]{0,200})")?'
    rf"<\|sep\|>({_B_TEXT})<\|close\|>argument|json<\|sep\|>({_B_TEXT})<\|close\|>json)"
    r"<\|sep\|>"
)
_B_CALL_END = re.compile(r"[ \t\r\n]*<\|close\|>call<\|sep\|>")
_THINK_CLOSE = f"{CLOSE}think{SEP}"
_RESPONSE_CLOSE = f"{CLOSE}response{SEP}"
_NO_TOOL_NAMES = _CHANNELS - _TOOL_CHANNELS

BatchCall = tuple[str | None, str, str]


def batch_message(
    plan: ParsePlan, text: str, ctx: CallContext
) -> tuple[list[str], list[str], list[BatchCall]] | None:
    """`KimiK3Machine(plan, 2, ctx)`'s content pieces, reasoning pieces and calls (native id,
    name, arguments) for the whole output `text`, or None for a shape this reader does not
    take (see above). The plan is not forced (`parsers.batch` leaves those to the runner)."""
    if not plan.reasoning_channel:
        return None  # thinking off: think markers dropped, their text is layout-ruled content
    tools_on = plan.parse_tools
    names = _CHANNELS if tools_on else _NO_TOOL_NAMES
    content: list[str] = []
    thought: list[str] = []
    calls: list[BatchCall] = []
    ids: set[str] = set()
    pos = 0
    if plan.start_in_reasoning:
        # an opener right at the start repeats the prompt's: markup (the tracker is fresh)
        start = len(THINK_OPEN) if text.startswith(THINK_OPEN) else 0
        pos = _batch_prose(text, start, _THINK_CLOSE, thought, names)
    top = _B_TOP.match
    while pos >= 0:
        m = top(text, pos)
        if m is None:
            return None  # text outside the channels, another marker: the runner's
        kind = m.lastgroup
        pos = m.end()
        if kind == "thought":
            pos = _batch_prose(text, pos, _THINK_CLOSE, thought, names)
        elif kind == "response":
            pos = _batch_prose(text, pos, _RESPONSE_CLOSE, content, names)
        elif kind == "call" or kind == "tools":
            if not tools_on:
                return None
            pos = _batch_calls(text, pos, kind == "tools", ctx, calls, ids)
        else:  # end of output, or the message's end (what follows is dropped)
            return content, thought, calls
    return None


def _batch_prose(text: str, pos: int, close: str, out: list[str], names: frozenset[str]) -> int:
    """Prose from `pos` to the channel's `close` (or the end of output) into `out`; the offset
    after the close, or of a tool opener that ends the channel first, or -1 when another real
    marker (or a possibly quoted opener) comes first."""
    end = text.find(close, pos)
    stop = len(text) if end == -1 else end
    i = pos
    find = _TOKEN_RE.search
    while (m := find(text, i, stop)) is not None:
        i = m.start()
        marker = read_marker(text, i, True, names)
        if marker is not False:
            if (
                marker is not None
                and marker.kind == "open"
                and marker.name in ("tools", "call")
                and _QUOTE_CHARS.search(text, pos, i) is None
            ):
                # a tool opener ends the channel (unquoted: the tracker, reset when the
                # channel began, has seen no quote character); the caller reads it
                if i > pos:
                    out.append(text[pos:i])
                return i
            return -1
        i += 1
    if stop > pos:
        out.append(text[pos:stop])
    return stop if end == -1 else end + len(close)


def _batch_calls(
    text: str, pos: int, region: bool, ctx: CallContext, calls: list[BatchCall], ids: set[str]
) -> int:
    """The calls of a tools channel (`region`) or one bare call at `pos`; the offset after
    them (at a message end: the end of output), or -1."""
    n = len(text)
    while True:
        if region:
            m = _B_TOOLS.match(text, pos)
            if m is None:
                return -1
            kind = m.lastgroup
            if kind == "close":
                return m.end()
            if kind == "stop":
                return n  # the message ends inside the tools channel: the rest is dropped
        head = _B_CALL.match(text, pos)
        if head is None:
            return -1
        name, index = head.groups()
        if "&" in name:
            name = decode_attr(name)
        if not name.strip():
            return -1  # not a call: its text is content (the runner's)
        if index is not None and "&" in index:
            index = decode_attr(index)
        pos = head.end()
        strings = ctx.string_params(name) if ctx.schemas else frozenset()
        parts: list[str] = []
        json_text: str | None = None
        while (arg := _B_ARG.match(text, pos)) is not None:
            pos = arg.end()
            key, kind_, value, whole = arg.groups()
            if json_text is not None or (whole is not None and parts):
                return -1  # a second argument style: a stray marker in the call
            if whole is not None:
                json_text = whole
                continue
            if "&" in key:
                key = decode_attr(key)
            if kind_ is None:
                kind_ = "string"
            elif kind_ != "string" and kind_ != "number":
                kind_ = decode_attr(kind_).strip().lower() or "string"
            if kind_ == "string" or key in strings:
                parts.append(f'{dumps(key)}:"{escape_text(value)}"')
            else:
                parts.append(f"{dumps(key)}:{canonical_json(value) or dumps(value)}")
        end = _B_CALL_END.match(text, pos)
        if end is None:
            return -1  # cut off, a stray or malformed marker: the runner's
        pos = end.end()
        if json_text is not None:
            args = json_text if json_text.strip(_WS) else "{}"
        else:
            args = "{" + ",".join(parts) + "}" if parts else "{}"
        calls.append((call_id(name, index, len(calls), ids), name, args))
        if not region:
            return pos


class KimiK3Grammar(ChannelGrammar):
    name = "kimi_k3"
    quoted_opener = f"{OPEN}tools{SEP}"

    def machine(self, plan: ParsePlan, generation: Generation, ctx: CallContext) -> FamilyMachine:
        return KimiK3Machine(plan, generation, ctx)

    def batch_message(
        self, plan: ParsePlan, text: str, ctx: CallContext
    ) -> tuple[list[str], list[str], list[BatchCall]] | None:
        return batch_message(plan, text, ctx)


GRAMMAR = KimiK3Grammar()
TOOL_GRAMMARS = {"kimi_k3": GRAMMAR}
REASONING_GRAMMARS = {"kimi_k3": GRAMMAR}
