"""Kimi K2 / K2.5: tool parser `kimi_k2`, reasoning parser `kimi_k25` (docs/parsers.md).

    <|tool_calls_section_begin|>
    <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{JSON}<|tool_call_end|>
    <|tool_calls_section_end|>

The section markers also come in the singular spelling (`<|tool_call_section_begin|>`), and a
bare `<|tool_call_begin|>` without a section is still a call. The call id is the model's own
`functions.NAME:IDX`, kept verbatim; the name is the id without the `functions.` prefix and the
`:IDX` suffix (names may hold dots, dashes, underscores, even colons).

Arguments: the JSON text between the argument marker and `<|tool_call_end|>`, streamed with the
model's spacing kept (`parsers.jsonstream`, `keep_space`). The end marker counts only outside
JSON strings, so a `<|tool_call_end|>` look-alike inside a string value does not end the call,
unless it is followed by nothing but another call, a section marker or the end of output (then
the string was cut off). Arguments that are not valid JSON are kept as written (the call still
stands). Outside strings a new call or a section marker also ends a call whose end marker is
missing: a malformed call never swallows the next one. A call whose id is malformed is content,
verbatim. A bare counter id (`0`) takes its name from the declared tools when exactly one fits.
A repeated id in a section gets the next free index. Inside a section, blank text between calls
is layout; other text is content.

Reasoning (`kimi_k25`): `<think>` ... `</think>`, forced (the plan starts in reasoning, a leading
`<think>` is only the opener); a tool-call start marker also ends it, with or without a tool
parser (`ReasoningGrammar.end_markers`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parsers.families.base import (
    BatchCall,
    CallArgs,
    CallBegin,
    CallContext,
    CallEnd,
    CallScanner,
    Event,
    ReasoningGrammar,
    ScanStep,
    Text,
    ToolGrammar,
    scanned_region,
)
from parsers.families.kimi_k2_facts import FACTS
from parsers.jsonstream import JsonValueReader

SECTION_BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
SECTION_ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
CALL_BEGIN = "<|tool_call_begin|>"
ARG_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"

# Markers that end a call's header or arguments (outside JSON strings) without its end marker.
_BOUNDARIES = (CALL_BEGIN, *SECTION_ENDS, *SECTION_BEGINS)
_HEADER_STOPS = (ARG_BEGIN, CALL_END, *_BOUNDARIES)
_ARG_STOPS = (CALL_END, *_BOUNDARIES)
_SECTION_STOPS = (CALL_BEGIN, *SECTION_ENDS, *SECTION_BEGINS)
_LONGEST = max(len(m) for m in (*_HEADER_STOPS, *_SECTION_STOPS))
_ID_RE = re.compile(r"(?P<name>\S+?):(?P<index>\d+)")
_COUNTER_RE = re.compile(r"[0-9]+")
_WORD = re.compile(r"\w")
_FUNCTIONS_PREFIX = "functions."
_WS = " \t\r\n"
# The batch grammar's arguments (`_whole_arguments`): blanks between a key and its colon are
# moved by the reader, so such arguments are the scanner's.
_KEY_BLANK_COLON = re.compile(r'"[ \t\r\n]+:')


def _no_constant(name: str) -> object:
    raise ValueError(name)  # NaN/Infinity: the reader rejects them


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_call_id(header: str) -> tuple[str, str] | None:
    """(id, name) from a call header such as ` functions.get_weather:0 `; None if malformed."""
    call_id = header.strip()
    match = _ID_RE.fullmatch(call_id)
    if match is None or "<|" in call_id:
        return None
    name = match.group("name")
    if name.startswith(_FUNCTIONS_PREFIX):
        name = name[len(_FUNCTIONS_PREFIX) :]
    if _WORD.search(name) is None:  # empty or punctuation only (`:::0`): not a name
        return None
    return call_id, name


def _marker_at(text: str, i: int, markers: tuple[str, ...], final: bool) -> str | None:
    """The marker starting at text[i]; "" when none can; None while a cut one may follow."""
    rest = text[i : i + _LONGEST]
    for marker in markers:
        if rest.startswith(marker):
            return marker
    if not final:
        for marker in markers:
            if len(rest) < len(marker) and marker.startswith(rest):
                return None
    return ""


def _strings_canonical(value: str) -> bool:
    """Every escaped string literal in the (valid JSON) `value` is written the way the reader
    re-escapes strings (`json.dumps(..., ensure_ascii=False)`): every escape is one that
    writes (no `\\/`, no `\\u` for a character it keeps or writes short). In valid JSON
    a backslash only stands in a string and raw control characters do not, so what is left
    after removing those escapes must hold no backslash."""
    return "\\" not in _CANONICAL_ESCAPE.sub("", value)


# the escapes `json.dumps(..., ensure_ascii=False)` writes: `\"`, `\\`, the short forms, and
# `\u00xx` (lowercase) for the other control characters
_CANONICAL_ESCAPE = re.compile(r'\\(?:["\\bfnrt]|u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))')


@dataclass(slots=True, init=False)
class _Call:
    """One call after `<|tool_call_begin|>`: header, then arguments, until an end or boundary.

    `feed` returns None while the call goes on, else the text after it (after the end marker,
    or from the boundary marker on, or from the offending marker on when the header failed).
    """

    ctx: CallContext
    ids: CallIds  # ids already used in this region
    _raw: list[str]  # the call's markup
    events: list[Event]
    failed: bool  # malformed header: nothing was emitted, `raw` is content
    ended: bool
    _named: bool
    _buf: str  # undecided text (the header, or a possible cut marker)
    # Pieces held after `_buf` while the header has no `<` yet, joined at the next `feed`:
    # joining them per piece made a long header quadratic (2M characters: 53 ms, 4M: 311).
    _more: list[str]
    _hscan: int  # where the header scan resumes in _buf + _more
    _args: list[str]  # argument text fed to the reader
    _args_len: int
    _started: bool  # a non-blank argument character was seen
    _sent: list[str]  # argument fragments emitted
    _in_string: bool
    _escape: bool
    # The model's spacing is kept (as vLLM returns Kimi arguments): `{"a": 1}` stays as written.
    _reader: JsonValueReader
    _bad_at: int | None  # offset in the argument text where the JSON went wrong
    _raw_mode: bool  # after a JSON error: look for the end marker verbatim
    # A bare counter id (`0`, no name): the name is inferred from the declared tools once the
    # arguments are complete, so the call goes out whole at its end.
    _counter_id: str | None

    def __init__(self, ctx: CallContext, ids: CallIds) -> None:
        self.ctx = ctx
        self.ids = ids
        self._raw = [CALL_BEGIN]
        self.events = []
        self.failed = False
        self.ended = False
        self._named = False
        self._buf = ""
        self._more = []
        self._hscan = 0
        self._args = []
        self._args_len = 0
        self._started = False
        self._sent = []
        self._in_string = False
        self._escape = False
        self._reader = JsonValueReader(keep_space=True)
        self._bad_at = None
        self._raw_mode = False
        self._counter_id = None

    @property
    def raw(self) -> str:
        """The call's markup as written, for V1 (returned as content when it does not parse)."""
        return "".join(self._raw)

    def feed(self, text: str, final: bool = False) -> str | None:
        if not final and self._hold_header(text):
            return None
        if self._more:
            text = self._buf + "".join(self._more) + text
            self._more = []
        else:
            text = self._buf + text
        self._buf = ""
        if not self._named:
            return self._header(text, final)
        return self._arguments(text, final)

    def streaming(self) -> bool:
        """Inside a JSON string of the arguments, nothing undecided: `string_run` may take
        the next chunk when it holds no marker start, quote or backslash."""
        return (
            self._named
            and self._started
            and not self._buf
            and not self._escape
            and self._in_string
            and self._bad_at is None
            and self._counter_id is None
        )

    def marker_waits(self, text: str) -> bool:
        """`feed(text)` for a chunk without `<` while the call waits: in its header (for a
        `<` or a cut marker at `_hscan`) or, after the arguments outside JSON strings, on a
        cut marker that the chunk does not finish. The held text grows."""
        if not self._buf:
            return False
        if self._hold_header(text):
            return True
        held = self._buf + text
        if not self._named:
            stops: tuple[str, ...] = _HEADER_STOPS
            at = self._hscan
        elif not self._in_string and not self._raw_mode:
            stops, at = _ARG_STOPS, 0
        else:
            return False
        if _marker_at(held, at, stops, False) is not None:
            return False
        self._buf = held
        return True

    def _hold_header(self, text: str) -> bool:
        """Hold `text` when neither it nor the header so far has a `<`: nothing to decide
        yet (what `_header` would conclude, without joining the header per piece)."""
        if self._named or not self._buf or "<" in text:
            return False
        if not self._more and self._hscan != len(self._buf):
            return False  # a `<` in the header waits for the rest of its marker
        self._more.append(text)
        self._hscan += len(text)
        return True

    def string_run(self, text: str) -> str | None:
        """`feed(text)` for such a chunk (what `_arguments` and `_take` do with it): the
        argument fragment, or None (nothing changed) when the reader is not in a string."""
        fragment = self._reader.string_run(text)
        if fragment is None:
            return None
        if fragment:
            self._sent.append(fragment)
        self._append(text)
        return fragment

    # -- header --

    def _header(self, text: str, final: bool) -> str | None:
        start = self._hscan
        while True:
            i = text.find("<", start)
            marker = _marker_at(text, i, _HEADER_STOPS, final) if i != -1 else ""
            if i == -1 or marker is None:
                if final:  # cut off inside the header: not a call
                    self._raw.append(text)
                    self.failed = self.ended = True
                    return ""
                self._buf, self._hscan = text, (len(text) if i == -1 else i)
                return None
            if marker == "":
                start = i + 1
                continue
            parsed = parse_call_id(text[:i]) if marker == ARG_BEGIN else None
            counter = text[:i].strip(_WS)
            if parsed is None and not (
                marker == ARG_BEGIN and _COUNTER_RE.fullmatch(counter) and self.ctx.schemas
            ):
                self._raw.append(text[:i])
                self.failed = self.ended = True
                return text[i:]
            self._raw.append(text[: i + len(ARG_BEGIN)])
            self._named = True
            if parsed is None:
                self._counter_id = counter
            else:
                call_id, name = parsed
                self.events.append(CallBegin(name, _unique(call_id, self.ids)))
            return self._arguments(text[i + len(ARG_BEGIN) :], final)

    # -- arguments --

    def _arguments(self, text: str, final: bool) -> str | None:
        n = len(text)
        i = fed = 0  # text[:fed] is taken (argument text)
        if not self._escape and "<" not in text and '"' not in text and "\\" not in text:
            i = n  # streaming: nothing here changes the string state or starts a marker
        while i < n:
            c = text[i]
            if c != "<":
                if not self._raw_mode:
                    if self._escape:
                        self._escape = False
                    elif self._in_string and c == "\\":
                        self._escape = True
                    elif c == '"':
                        self._in_string = not self._in_string
                i += 1
                continue
            # Decide only once the reader has seen everything before this `<`: a JSON error
            # earlier switches to the verbatim scan from the error on (chunking-independent).
            bad = self._take(text[fed:i])
            if bad is not None:
                i = fed = fed + bad
                continue
            fed = i
            if self._raw_mode or not self._in_string:
                marker = _marker_at(text, i, _ARG_STOPS, final)
                if marker is None:
                    self._buf = text[i:]
                    return None
                if marker:
                    return self._end(text, i, marker)
            elif text.startswith(CALL_END, i):
                # A look-alike inside a string, unless only another call, a section marker
                # or the end of output follows it (then the string was cut off).
                j = i + len(CALL_END)
                while j < n and text[j] in _WS:
                    j += 1
                after = _marker_at(text, j, _BOUNDARIES, final) if j < n else ""
                if (j == n and not final) or after is None:
                    self._buf = text[i:]
                    return None
                if j == n or after:
                    return self._end(text, i, CALL_END)
            elif not final and CALL_END.startswith(text[i : i + len(CALL_END)]):
                self._buf = text[i:]
                return None
            i += 1
        bad = self._take(text[fed:])
        if bad is not None:
            return self._arguments(text[fed + bad :], final)  # the rest, verbatim scan
        if final:
            self._close(terminated=False)
            return ""
        return None

    def _append(self, text: str) -> None:
        self._args.append(text)
        self._args_len += len(text)
        self._raw.append(text)

    def _take(self, text: str) -> int | None:
        """Feed argument text to the reader while the JSON holds. Returns None, or the offset in
        `text` where the JSON went wrong (only the text before it was taken)."""
        if not text:
            return None
        lead = 0
        if not self._started:
            body = text.lstrip(_WS)
            lead = len(text) - len(body)
            self._raw.append(text[:lead])
            if not body:
                return None
            text, self._started = body, True
        if self._bad_at is not None:
            self._append(text)
            return None
        reader = self._reader
        pos = 0
        if not reader.done:
            out, pos = reader.feed(text)
            self._send(out)
            if reader.error is not None:
                return lead + self._go_raw(text, pos)
        if reader.done:
            rest = text[pos:]
            blank = len(rest) - len(rest.lstrip(_WS))
            if blank < len(rest):  # more than whitespace after the value
                return lead + self._go_raw(text, pos + blank)
        self._append(text)
        return None

    def _go_raw(self, text: str, bad: int) -> int:
        self._append(text[:bad])
        self._bad_at = self._args_len
        self._raw_mode = True
        return bad

    def _send(self, fragment: str) -> None:
        if fragment:
            self._sent.append(fragment)
            if self._counter_id is None:
                self.events.append(CallArgs(fragment))

    def _end(self, text: str, i: int, marker: str) -> str:
        if marker == CALL_END:
            self._raw.append(CALL_END)
            self._close(terminated=True)
            return text[i + len(CALL_END) :]
        self._close(terminated=False)
        return text[i:]

    def _close(self, *, terminated: bool) -> None:
        """The call is over: at its end marker, or cut off (boundary marker, end of output)."""
        self.ended = True
        if self._counter_id is not None:
            self._close_counter(terminated)
            return
        reader = self._reader
        if not self._started:
            self._send("{}")
            self.events.append(CallEnd(True, self.raw))
            return
        if self._bad_at is None and not reader.done:
            last = reader.end()  # a trailing number completes the value here
            if reader.done:
                self._send(last)
        if reader.done and self._bad_at is None:
            self.events.append(CallEnd(True, self.raw))
            return
        if terminated:
            # Not valid JSON but a whole call: the arguments are kept as written.
            written = "".join(self._args).rstrip(_WS)
            sent = "".join(self._sent)
            if written.startswith(sent):
                tail = written[len(sent) :]
            else:  # the valid part was re-serialized: keep the rest as written
                bad = len(written) if self._bad_at is None else self._bad_at
                tail = reader.pending_token + written[bad:]
            self._send(tail)
            self.events.append(CallEnd(True, self.raw))
            return
        # Cut off with unfinished JSON: never repaired, the arguments stay what was sent; the
        # text after a JSON error goes back as content (V2 already streamed the part before it).
        written = "".join(self._args)
        if self._bad_at is not None and written[self._bad_at :]:
            rest = written[self._bad_at :]
            self.events.append(CallEnd(False, self.raw[: len(self.raw) - len(rest)]))
            self.events.append(Text(rest))
            return
        self.events.append(CallEnd(False, self.raw))

    def _close_counter(self, terminated: bool) -> None:
        """A call with a bare counter id: infer its name, then send it whole (or fail)."""
        assert self._counter_id is not None
        reader = self._reader
        value: Any = None
        if not self._started:
            args, value = "{}", {}
        else:
            if self._bad_at is None and not reader.done:
                last = reader.end()
                if reader.done:
                    self._sent.append(last)
            if reader.done and self._bad_at is None:
                args = "".join(self._sent)
                value = json.loads(args)
            else:
                args = "".join(self._args).rstrip(_WS)  # nothing went out yet: as written
        name = _infer_tool(self.ctx, value) if (terminated or value is not None) else None
        if name is None:
            self.failed = True  # not a call we can name: its text is content
            return
        call_id = _unique(self._counter_id, self.ids)
        self.events += [CallBegin(name, call_id), CallArgs(args), CallEnd(True, self.raw)]


class CallIds:
    """The ids used so far in a region, and per id base the least index that may be free."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        # Ids are only added, so the least free index of a base never goes down: the search
        # resumes there (from 0 each time, a repeated id made a looping model's output
        # quadratic).
        self.free: dict[str, int] = {}


def _unique(call_id: str, ids: CallIds) -> str:
    """Ids are unique within a response: a repeated one gets the next free index."""
    used = ids.used
    if call_id in used:
        base = call_id.rpartition(":")[0] or call_id
        k = ids.free.get(base, 0)
        while f"{base}:{k}" in used:
            k += 1
        ids.free[base] = k + 1
        call_id = f"{base}:{k}"
    used.add(call_id)
    return call_id


def _infer_tool(ctx: CallContext, value: Any) -> str | None:
    """The declared tool a nameless call is for: the only tool, or the only one whose
    parameters admit the argument keys (all keys declared, all required keys given)."""
    if len(ctx.schemas) == 1:
        return next(iter(ctx.schemas))
    if not isinstance(value, dict):
        return None
    keys = set(value)
    fits = []
    for name, params in ctx.schemas.items():
        props = params.get("properties") if isinstance(params, Mapping) else None
        required = params.get("required") if isinstance(params, Mapping) else None
        declared = set(props) if isinstance(props, Mapping) else set()
        needed = (
            {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
        )
        if keys <= declared and needed <= keys:
            fits.append(name)
    return fits[0] if len(fits) == 1 else None


_FEED_STEP = 1 << 15  # the longest piece of one feed a section scan slices (see feed)


class _Scanner(CallScanner):
    """A call region: a section (many calls, until its end marker) or one bare call."""

    def __init__(self, start: str, ctx: CallContext) -> None:
        self._ctx = ctx
        self._ids = CallIds()
        self._section = start != CALL_BEGIN
        self._call: _Call | None = None if self._section else self._new_call()
        self._buf = ""
        self._run_started = False  # the current run of section text has non-blank text
        # trailing blanks of that run: layout if a marker follows (pieces: `+=` on an
        # attribute copied the whole run per chunk)
        self._blanks: list[str] = []
        self._emitted = False

    def _new_call(self) -> _Call:
        return _Call(ctx=self._ctx, ids=self._ids)

    def stream(self, text: str) -> str | None:
        call = self._call
        if (
            call is not None
            and not self._buf
            and call.streaming()
            and "<" not in text  # nothing here can start a marker or
            and '"' not in text  # change the string state
            and "\\" not in text
        ):
            fragment = call.string_run(text)
            if fragment:
                self._emitted = True
            return fragment
        if "<" in text:
            return None
        # a marker still arriving (`_marker_at` says wait) and the chunk cannot start another:
        # it goes on waiting, in the section text or after a call's arguments
        if call is None:
            held = self._buf + text
            if self._buf and _marker_at(held, 0, _SECTION_STOPS, False) is None:
                self._buf = held
                return ""
        elif call.marker_waits(text):
            return ""
        return None

    def feed(self, text: str) -> ScanStep:
        if len(text) <= _FEED_STEP:
            return self._scan(text, final=False)
        # A long feed (V1 hands over the whole jailed region) in bounded steps: each marker
        # step slices what is left of its input, so many markers in one huge feed cost
        # quadratic time (`<|tool_call_begin|>` x 10,000: 23x the time for 10x the input).
        # Chunking never changes the result (docs/parsers.md, principle 2).
        events: list[Event] = []
        pos = 0
        while True:
            result = self._scan(text[pos : pos + _FEED_STEP], final=False)
            pos += _FEED_STEP
            events += result.events
            if result.status != "more" or pos >= len(text):
                return ScanStep(events, result.status, result.rest + text[pos:])

    def finish(self) -> ScanStep:
        return self._scan("", final=True)

    def _scan(self, text: str, final: bool) -> ScanStep:
        events: list[Event] = []
        buf = self._buf + text
        self._buf = ""
        while True:
            call = self._call
            if call is not None:
                rest = call.feed(buf, final)
                if call.failed and not self._section and not self._emitted:
                    # A bare start marker that is not a call: the runner re-scans the text.
                    return ScanStep([], "reject", call.raw[len(CALL_BEGIN) :] + (rest or ""))
                if call.failed:  # a malformed call is content, verbatim
                    self._text(events, call.raw)
                else:
                    self._events(events, call.events)
                    call.events.clear()
                if rest is None:
                    return ScanStep(events)
                self._call = None
                buf = rest
                if not self._section:
                    return ScanStep(events, "done", buf)
                continue
            done, buf = self._section_text(buf, events, final)
            if done:
                return ScanStep(events, "done", buf)
            if self._call is None:
                self._buf = buf
                return ScanStep(events, "done" if final else "more", "")

    def _section_text(self, buf: str, events: list[Event], final: bool) -> tuple[bool, str]:
        """Scan section text up to the next call (opened in self._call) or the section end."""
        i = 0
        while True:
            j = buf.find("<", i)
            marker = _marker_at(buf, j, _SECTION_STOPS, final) if j != -1 else ""
            if j == -1 or marker is None:
                self._run_text(events, buf[i:] if j == -1 else buf[i:j])
                if final:
                    self._run_end()
                return False, "" if j == -1 else buf[j:]
            if marker == "":
                self._run_text(events, buf[i : j + 1])
                i = j + 1
                continue
            self._run_text(events, buf[i:j])
            self._run_end()
            i = j + len(marker)
            if marker == CALL_BEGIN:
                self._call = self._new_call()
                return False, buf[i:]
            if marker in SECTION_ENDS:
                return True, buf[i:]
            # a repeated section start is layout

    def _run_text(self, events: list[Event], text: str) -> None:
        """Section text between markers: content, without the blanks next to the markers."""
        if not text:
            return
        if not self._run_started:
            text = text.lstrip(_WS)
            if not text:
                return
            self._run_started = True
        body = text.rstrip(_WS)
        if body:
            self._text(events, "".join(self._blanks) + body if self._blanks else body)
            self._blanks = []
        if len(body) < len(text):
            self._blanks.append(text[len(body) :])

    def _run_end(self) -> None:
        self._blanks = []
        self._run_started = False

    def _text(self, events: list[Event], text: str) -> None:
        if text:
            self._events(events, [Text(text)])

    def _events(self, events: list[Event], new: list[Event]) -> None:
        if new:
            self._emitted = True
            events.extend(new)


start_markers = (*SECTION_BEGINS, CALL_BEGIN)


class KimiK2Grammar(ToolGrammar):
    name = "kimi_k2"
    start_markers = start_markers
    stray_markers = (*SECTION_ENDS, CALL_END, "<|im_end|>")
    quoted_opener = SECTION_BEGINS[0]

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return (CALL_END,) if start == CALL_BEGIN else SECTION_ENDS

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return _Scanner(start, ctx)

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # a section in the common shape read directly; anything else: the scanner at once
        found = _whole_section(text, pos) if start != CALL_BEGIN else None
        return found if found is not None else scanned_region(self, text, pos, start, ctx)


# --- whole-output batch grammar (parsers.batch) ---
# A section (after its begin marker) of calls in the common shape, read with `str.find`: blanks,
# then calls `<|tool_call_begin|>` + a `functions.NAME:IDX` header + `<|tool_call_argument_begin|>`
# + arguments `_whole_arguments` takes (one JSON object kept as written) + `<|tool_call_end|>`,
# separated by blanks, then a section end. Ids as the scanner gives them (`_unique` per
# section). Anything else (counter ids, text between calls, other argument shapes, a cut
# section) is the scanner's.
_BLANK_RUN = re.compile(r"[ \t\r\n]*")


def _whole_section(text: str, pos: int) -> BatchCall | None:
    calls: list[tuple[str | None, str, str]] = []
    ids = CallIds()
    i = pos
    while True:
        i = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]
        for end in SECTION_ENDS:
            if text.startswith(end, i):
                return (calls, i + len(end)) if calls else None
        if not text.startswith(CALL_BEGIN, i):
            return None
        i += len(CALL_BEGIN)
        a = text.find(ARG_BEGIN, i)
        if a == -1 or text.find("<", i, a) != -1:
            return None
        parsed = parse_call_id(text[i:a])
        if parsed is None:
            return None
        i = a + len(ARG_BEGIN)
        k = text.find(CALL_END, i)
        if k == -1:
            return None
        value = _whole_arguments(text, i, k)
        if value is None:
            return None
        call_id, name = parsed
        calls.append((_unique(call_id, ids), name, value))
        i = k + len(CALL_END)


def _whole_arguments(text: str, start: int, stop: int) -> str | None:
    """The arguments `text[start:stop]` (before the end marker) in the common shape (a JSON
    object, no `<`, no blank before a key's colon, only blanks around it, escaped strings
    written as `json.dumps` writes them), as written: what the reader keeps for them; else
    None."""
    if text.find("<", start, stop) != -1 or _KEY_BLANK_COLON.search(text, start, stop):
        return None
    lead = _BLANK_RUN.match(text, start).end()  # type: ignore[union-attr]
    if not text.startswith("{", lead):
        return None
    try:
        _, end = _DECODER.raw_decode(text, lead)
    except ValueError:
        return None
    if end > stop or _BLANK_RUN.match(text, end, stop).end() != stop:  # type: ignore[union-attr]
        return None
    value = text[lead:end]
    if "\\" in value and not _strings_canonical(value):
        return None
    return value


TOOL_GRAMMARS = {"kimi_k2": KimiK2Grammar()}
REASONING_GRAMMARS = {
    # The tool section start (or a bare call start) ends reasoning even without a tool parser.
    "kimi_k25": ReasoningGrammar(
        "kimi_k25", *FACTS.think_markers(), start_markers, stray_markers=("<|im_end|>",)
    ),
}
