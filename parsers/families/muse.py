"""Muse (`muse`, alias `muse_glimmer`; reasoning `muse`): a recipient-addressed message grammar.

    <|start|>assistant to=RECIPIENT<|message|>BODY<|eom|>   (more messages follow)
    <|start|>assistant to=RECIPIENT<|message|>BODY<|eot|>   (the turn ends)

The prompt ends with `<|start|>assistant`, so the first message arrives as
` to=self<|message|>...`. Recipient `self` is reasoning, `user` or none is content, anything
else is a tool channel whose body holds ATEM markup (`parsers.families.muse_atem`). Calls
come only from tool-channel bodies. V2 only.

Choices the contract leaves open (docs/parsers.md, Muse):
* Output that does not start with a header is content (a headerless message), until a header.
* A missing `<|eot|>` (or `<|eom|>`) at the end of output closes the last message normally.
* A message also ends where the next header starts: `<|start|>`, or an unquoted `<|message|>`
  whose header (` to=NAME`) is the tail of the body (the model sometimes drops `<|eom|>`).
* Text between messages is content (a headerless message). Blank text between messages, after
  the last one, or between ATEM tags in a tool body is layout and dropped; so are blanks that
  end a reasoning/content body right before a tool message (like blanks before a call start in
  the marker families).
* Bodies of consecutive messages of one channel are joined as they are (nothing is added).
* A doubled namespace `X.X` becomes `X` when `X` is a declared tool; other names are kept.
* Header markers inside quotes or code in a reasoning/content body are text (V2 principle 3);
  `<|eom|>`/`<|eot|>` always end a message, so a stray quote cannot swallow the turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from parsers.batch import prose_shape
from parsers.families.base import (
    CallArgs,
    CallBegin,
    CallContext,
    CallEnd,
    Channel,
    ChannelGrammar,
    Event,
    FamilyMachine,
    Generation,
    ScanStep,
    Text,
)
from parsers.families.muse_atem import AtemScanner, batch_calls
from parsers.guided import GuidedScanner
from parsers.plan import ParsePlan
from parsers.scan import BlankRuns, MarkerSet, QuoteTracker

START = "<|start|>"
MESSAGE = "<|message|>"
EOM = "<|eom|>"
EOT = "<|eot|>"
SELF = "self"
USER = "user"

_MARKERS = MarkerSet((START, MESSAGE, EOM, EOT))
_ENDS = frozenset({EOM, EOT})
_OPENERS = frozenset({START, MESSAGE})
_HSPACE = frozenset(" \t")  # blanks inside a header line (not newlines)
_ROLE = "assistant"
_MAX_HEADER = 256  # longer "headers" are not headers (bounds what is held back)
_WS = frozenset(" \t\r\n")
_BLANKS = " \t\r\n"


def _name_char(c: str) -> bool:
    return not c.isspace() and c != "<"


# `to=` at the start or after a blank, then name characters (`_name_char`; `\s` and
# `str.isspace` are the same test)
_RECIPIENT = re.compile(r"(?<!\S)to=([^\s<]+)")


def _recipient(header: str) -> str | None:
    """The first `to=NAME` recipient in a header's text, or None."""
    m = _RECIPIENT.search(header)
    return None if m is None else m.group(1)


def _header_tail(text: str, prev: str, complete: bool) -> int:
    """Where a header (`[blanks]to=NAME[blanks]`) ending `text` starts, else len(text).

    complete=True: `<|message|>` follows `text`, so a bare (recipient-less) header is just the
    trailing blanks. complete=False: how much of the tail could still become a header.
    """
    j = len(text)
    # Fast path (most calls): no blank at the end and no `to=` that could start a header.
    if (
        not complete
        and j
        and text[-1] not in _HSPACE
        and text[-1] != "t"
        and not text.endswith("to")
        and "to=" not in text[-_MAX_HEADER:]
    ):
        return j
    while j > 0 and text[j - 1] in _HSPACE:
        j -= 1
    k = j
    while k > 0 and _name_char(text[k - 1]):
        k -= 1
    run = text[k:j]
    before = text[k - 1] if k > 0 else prev
    if run and len(run) <= _MAX_HEADER and (before == "" or before.isspace()):
        ok = run.startswith("to=") and len(run) > 3 if complete else run[:3] == "to="[: len(run)]
        if ok:
            j = k
            while j > 0 and text[j - 1] in _HSPACE:
                j -= 1
            return j
    return j


def _bare_header(text: str) -> tuple[str, int, str | None]:
    """A header without `<|start|>`: `[assistant][ ]to=NAME[ ]<|message|>` or `<|message|>`.

    Returns ("match", end, recipient), ("partial", 0, None) while `text` may still become one,
    or ("no", 0, None).
    """
    partial: tuple[str, int, str | None] = ("partial", 0, None)
    no: tuple[str, int, str | None] = ("no", 0, None)
    n = len(text)
    i = 0
    if text[:1] == "a":
        if n < len(_ROLE):
            return partial if _ROLE.startswith(text) else no
        if not text.startswith(_ROLE):
            return no
        i = len(_ROLE)
    while i < n and text[i] in _HSPACE:
        i += 1
    if i == n:
        return partial
    recipient: str | None = None
    if text[i] == "t":
        head = text[i : i + 3]
        if head != "to=":
            return partial if "to=".startswith(head) and i + 3 > n else no
        if i > 0 and text[i - 1] not in _HSPACE:
            return no
        j = i + 3
        while j < n and _name_char(text[j]):
            j += 1
        if j == n:
            return partial
        if j == i + 3:
            return no
        recipient = text[i + 3 : j]
        i = j
        while i < n and text[i] in _HSPACE:
            i += 1
        if i == n:
            return partial
    tail = text[i : i + len(MESSAGE)]
    if tail == MESSAGE:
        # longer is no header: a stream stops waiting at the bound (`_boundary`), so whole
        # text must not find one past it either
        return ("match", i + len(MESSAGE), recipient) if i <= _MAX_HEADER - len(MESSAGE) else no
    return partial if MESSAGE.startswith(tail) else no


def tool_name(name: str, registered: frozenset[str]) -> str:
    """A doubled namespace `X.X` is the declared tool `X` (the template renders `X.*`)."""
    if name in registered:
        return name
    head, dot, tail = name.partition(".")
    if dot and head == tail and head in registered:
        return head
    return name


class MuseMachine(FamilyMachine):
    """One response's Muse parser (see the module docstring)."""

    def __init__(self, plan: ParsePlan, generation: Generation, ctx: CallContext) -> None:
        self._reasoning_on = plan.reasoning_channel
        self._parse_tools = plan.parse_tools
        self._quote_aware = generation == 2
        self._registered = frozenset(ctx.schemas)
        self._ctx = ctx
        self._guided: GuidedScanner | None = None
        self._guided_pending = plan.parse_tools and plan.tool_mode in ("required", "named")
        self._named = plan.named_tool if plan.tool_mode == "named" else None
        self._buf = ""
        self._mode = "boundary"  # boundary | header | bad (a header too long) | body | guided
        self._header = ""
        self._kind = "content"  # body kind: reasoning | content | tool
        self._prev = ""  # last body character passed on (for the header-tail word boundary)
        self._quotes = QuoteTracker()
        self._atem: AtemScanner | None = None
        # Blanks that ended a prose body cut by the next header: markup if that header opens a
        # tool message (like blanks before a call start in the marker families), else text.
        self._ws_hold = ""
        self._ws_channel: Channel = "content"
        self._blank_runs = BlankRuns()  # held blanks are rescanned per feed: batch long runs
        if plan.start_in_reasoning:
            self._open_body(SELF if plan.reasoning_channel else USER, [])

    # -- FamilyMachine ---------------------------------------------------------------------

    def feed(self, text: str) -> list[Event]:
        taken = self._blank_runs.take(text)
        if taken is None:
            return []
        out: list[Event] = []
        self._buf += taken
        self._run(out, final=False)
        return out

    def finish(self, reason: str = "stop") -> list[Event]:
        out: list[Event] = []
        self._buf += self._blank_runs.flush()
        self._run(out, final=True)
        if self._mode == "header":
            self._release_ws(out, drop=False)
            self._stray(START + self._header, out)
            self._header = ""
        elif self._mode == "boundary" and self._buf.strip():
            self._stray(self._buf, out)  # (blank text after the last message is layout)
        elif self._mode == "body":
            self._body_text(self._buf, out)
            self._close_body(out)
        self._buf = ""
        return out

    # -- guided JSON of a forced tool choice --------------------------------------------------

    def _guided_step(self, out: list[Event], final: bool) -> bool:
        guided = self._guided
        assert guided is not None
        data, self._buf = self._buf, ""
        res = guided.feed(data) if data else ScanStep([])
        if res.status == "more" and final:
            end = guided.finish()
            res = ScanStep(res.events + end.events, end.status, end.rest)
        out.extend(res.events)
        if res.status == "more":
            return False
        self._guided = None
        self._buf = res.rest
        if res.status == "reject":  # not guided JSON after all: ordinary headerless text
            self._open_body(None, out)
        else:  # the JSON is over: whatever follows is ordinary Muse output
            self._mode = "boundary"
        return True

    # -- framing -------------------------------------------------------------------------------

    def _run(self, out: list[Event], final: bool) -> None:
        while True:
            if self._mode == "boundary":
                if not self._boundary(out, final):
                    return
            elif self._mode == "header":
                if not self._header_step(out, final):
                    return
            elif self._mode == "bad":
                if not self._bad_step(out, final):
                    return
            elif self._mode == "body":
                if not self._body_step(out, final):
                    return
            elif self._mode == "guided":
                if not self._guided_step(out, final):
                    return
            else:
                return

    def _boundary(self, out: list[Event], final: bool) -> bool:
        buf = self._buf
        i = 0
        while i < len(buf) and buf[i] in _WS:
            i += 1
        rest = buf[i:]
        if not rest:
            return False
        if self._guided_pending and rest[0] in "[{":
            # A forced tool choice's guided JSON (at the start, or after reasoning)
            self._guided_pending = False
            self._guided = GuidedScanner(self._named)
            self._mode = "guided"
            self._buf = rest
            return True
        if rest.startswith(START):
            self._buf = rest[len(START) :]  # blank layout between messages is dropped
            self._mode = "header"
            self._header = ""
            return True
        if START.startswith(rest) and not final:
            return False
        state, end, recipient = _bare_header(rest)
        if state == "partial" and not final and len(rest) < _MAX_HEADER:
            return False
        if state == "match":
            self._buf = rest[end:]
            self._open_body(recipient, out)
            return True
        # Not a header: text between messages is a headerless (content) message.
        self._open_body(None, out)
        return True

    def _header_step(self, out: list[Event], final: bool) -> bool:
        buf = self._buf
        m = _MARKERS.search(buf)
        if m is None:
            keep = _MARKERS.holdback(buf)
            self._header += buf[:keep]
            self._buf = buf[keep:]
            if len(self._header) > _MAX_HEADER:
                # not a header; its text runs to the next marker, as when that marker is
                # already here (below): where a stream noticed must not matter
                self._bad_header(out)
                self._mode = "bad"
                return True
            return False
        self._header += buf[: m.start()]
        if m.group() != MESSAGE or len(self._header) > _MAX_HEADER:
            self._buf = buf[m.start() :]
            return self._bad_header(out)
        self._buf = buf[m.end() :]
        recipient = _recipient(self._header)
        self._header = ""
        self._open_body(recipient, out)
        return True

    def _bad_step(self, out: list[Event], final: bool) -> bool:
        """After a header that grew too long: its text up to the next marker is content."""
        buf = self._buf
        m = _MARKERS.search(buf)
        if m is None:
            keep = len(buf) if final else _MARKERS.holdback(buf)
            self._stray(buf[:keep], out)
            self._buf = buf[keep:]
            return False
        self._stray(buf[: m.start()], out)
        self._buf = buf[m.start() :]
        self._mode = "boundary"
        return True

    def _bad_header(self, out: list[Event]) -> bool:
        """`<|start|>` not followed by a header: the text is content, verbatim."""
        self._release_ws(out, drop=False)
        self._stray(START + self._header, out)
        self._header = ""
        self._mode = "boundary"
        return True

    def _stray(self, text: str, out: list[Event]) -> None:
        if text:
            out.append(Text(text, "content"))

    def _release_ws(self, out: list[Event], drop: bool) -> None:
        if self._ws_hold and not drop:
            out.append(Text(self._ws_hold, self._ws_channel))
        self._ws_hold = ""

    def _open_body(self, recipient: str | None, out: list[Event]) -> None:
        if recipient == SELF:
            self._kind = "reasoning" if self._reasoning_on else "content"
        elif recipient is None or recipient == USER or not self._parse_tools:
            self._kind = "content"
        else:
            self._kind = "tool"
            self._atem = AtemScanner(self._string_param)
        self._release_ws(out, drop=self._kind == "tool")
        if self._kind != "reasoning":
            self._guided_pending = False  # the answer started: no guided JSON from here on
        self._mode = "body"
        self._quotes.reset()
        self._prev = ""

    def _body_step(self, out: list[Event], final: bool) -> bool:
        buf = self._buf
        pos = 0
        is_prose = self._kind != "tool"
        prose = is_prose and self._quote_aware  # quote/code awareness (V2)
        while True:
            m = _MARKERS.search(buf, pos)
            if m is None:
                break
            marker = m.group()
            seg = buf[: m.start()]
            cut = _header_tail(seg, self._prev, True) if marker == MESSAGE else len(seg)
            if prose and marker in _OPENERS:
                self._quotes.feed(buf[pos:cut])
                nxt = seg[cut] if cut < len(seg) else marker[0]
                if self._quotes.quoted(nxt):
                    self._quotes.feed(buf[cut : m.end()])
                    pos = m.end()
                    continue
            elif prose:
                self._quotes.feed(buf[pos:cut])
            text = seg[:cut]
            if is_prose and marker in _OPENERS:
                body = text.rstrip(_BLANKS)
                self._ws_hold = text[len(body) :]
                self._ws_channel = "reasoning" if self._kind == "reasoning" else "content"
                text = body
            self._body_text(text, out)
            self._buf = buf[m.end() :]
            self._close_body(out)
            if marker in _ENDS:
                self._mode = "boundary"
            elif marker == START:
                self._mode = "header"
                self._header = ""
            else:
                self._open_body(_recipient(seg[cut:]), out)
            return True
        # No marker: pass on what can no longer become one (or a header before one).
        if final:
            return False
        held = _MARKERS.holdback(buf, pos)
        keep = _header_tail(buf[:held], self._prev, False)
        if is_prose:  # trailing blanks wait: a header may follow them
            keep = len(buf[:keep].rstrip(_BLANKS))
        keep = max(keep, pos)
        if prose:
            self._quotes.feed(buf[pos:keep])
        self._body_text(buf[:keep], out)
        self._buf = buf[keep:]
        return False

    def _body_text(self, text: str, out: list[Event]) -> None:
        if not text:
            return
        self._prev = text[-1]
        kind = self._kind
        if kind == "tool":
            assert self._atem is not None
            self._atem.feed(text)
            self._tool_events(out)
            return
        channel: Channel = "reasoning" if kind == "reasoning" else "content"
        out.append(Text(text, channel))

    def _close_body(self, out: list[Event]) -> None:
        if self._kind == "tool" and self._atem is not None:
            self._atem.finish()
            self._tool_events(out)
            self._atem = None
        self._kind = "content"

    def _tool_events(self, out: list[Event]) -> None:
        atem = self._atem
        assert atem is not None
        for ev in atem.events:
            if ev.kind == "call":
                out.append(CallBegin(self._tool_name(ev.text)))
            elif ev.kind == "args":
                out.append(CallArgs(ev.text))
            elif ev.kind == "end":
                out.append(CallEnd())
            elif ev.kind == "abort":
                out.append(CallEnd(complete=False, raw=ev.text))
            elif ev.text:
                out.append(Text(ev.text, "content"))
        atem.events.clear()

    def _string_param(self, name: str, key: str) -> bool:
        """Whether the tool declares `key` a string: then its text is never read as JSON."""
        return self._ctx.is_string_param(self._tool_name(name), key)

    def _tool_name(self, name: str) -> str:
        return tool_name(name, self._registered)


# --- whole-output batch grammar (parsers.batch) ---
# Messages in the common shape: blanks between them, each `<|start|>HEADER<|message|>` (the
# first may be a bare header, as the prompt ends with `<|start|>assistant`), a body ended by
# `<|eom|>`/`<|eot|>` or the end of output. Exact by `MuseMachine`'s rules: blank text
# between messages is layout; a reasoning/content body runs to its end marker, past header
# markers the quote tracker (reset at the body's start, fed as `_body_step` feeds it) finds
# quoted; a tool body runs to the first marker and is read by `muse_atem.batch_calls`.
# Anything else (output starting in reasoning, text between messages, a header that ends a
# body without its end marker, a bad header, an unread tool body): None, the runner's.

# blanks, then: the common header whole (its recipient: what `_recipient` finds in it; at
# most `_MAX_HEADER` characters with `assistant to=`), any
# other `<|start|>`, the end of output, or (nothing) a bare header
_B_BOUNDARY = re.compile(
    rf"[ \t\r\n]*(?:<\|start\|>assistant to=(?P<to>[^\s<]{{1,{_MAX_HEADER - 13}}})<\|message\|>"
    r"|(?P<start><\|start\|>)|(?P<end>\Z))?"
)
_BARE_WINDOW = len(_ROLE) + _MAX_HEADER + len(MESSAGE)  # enough for any bare header


def batch_message(
    plan: ParsePlan, text: str, ctx: CallContext
) -> tuple[list[str], list[str], list[tuple[str | None, str, str]]] | None:
    """`MuseMachine(plan, 2, ctx)`'s content pieces, reasoning pieces and calls (no native
    ids) for the whole output `text`, or None for a shape this reader does not take (see
    above). The plan is not forced (`parsers.batch` leaves those to the runner)."""
    if plan.start_in_reasoning:
        return None
    registered = frozenset(ctx.schemas)

    def string_param(name: str, key: str) -> bool:
        return ctx.is_string_param(tool_name(name, registered), key)

    declared = string_param if registered else None
    content: list[str] = []
    thought: list[str] = []
    calls: list[tuple[str | None, str, str]] = []
    search = _MARKERS.pattern.search
    n = len(text)
    pos = 0
    while True:
        m = _B_BOUNDARY.match(text, pos)
        assert m is not None  # (everything in it is optional)
        kind = m.lastgroup
        if kind == "end":
            return content, thought, calls
        if kind == "to":
            recipient: str | None = m.group(1)
            pos = m.end()
        elif kind == "start":
            header = search(text, m.end())
            if header is None or header.group() != MESSAGE:
                return None  # a bad header: text, the runner's
            if header.start() - m.end() > _MAX_HEADER:
                return None
            recipient = _recipient(text[m.end() : header.start()])
            pos = header.end()
        else:
            j = m.end()
            state, end, recipient = _bare_header(text[j : j + _BARE_WINDOW])
            if state != "match":
                return None  # a headerless message: the runner's
            pos = j + end
        if recipient == SELF:
            out = thought if plan.reasoning_channel else content
        elif recipient is None or recipient == USER or not plan.parse_tools:
            out = content
        else:  # a tool body: to its first marker
            mk = search(text, pos)
            stop = n if mk is None else mk.start()
            if mk is not None and mk.group() not in _ENDS:
                return None  # a header ends it: the runner's
            found = batch_calls(text, pos, stop, declared)
            if found is None:
                return None
            calls += [(None, tool_name(name, registered), args) for name, args in found]
            pos = n if mk is None else mk.end()
            continue
        # a reasoning/content body: to its end marker, past quoted header markers
        ends = _batch_body(text, pos, search)
        if ends is False:
            return None
        stop = n if ends is None else ends.start()
        if stop > pos:
            out.append(text[pos:stop])
        pos = n if ends is None else ends.end()


def _batch_body(
    text: str, pos: int, search: Callable[[str, int], re.Match[str] | None]
) -> re.Match[str] | Literal[False] | None:
    """The end marker of the prose body at `pos` (None: the end of output), when every
    `<|start|>` before it is quoted; else False. The tracker's decision, from its reset at
    the body's start; `batch.prose_shape` decides the common shapes without it (as
    `batch._walk` does)."""
    check = pos  # the fresh-tracker check starts here
    rechecks = 0
    quotes: QuoteTracker | None = None
    fed = pos
    while True:
        mk = search(text, fed)
        if mk is None or mk.group() in _ENDS:
            return mk
        if mk.group() == MESSAGE:
            return False  # a header may end the body: the runner's
        if quotes is None and rechecks < 8:
            shape = prose_shape(text[check : mk.start()])
            if shape is not None:
                if shape.group("open") is None:
                    return False  # unquoted: it ends the body (the runner's)
                check += shape.start("open")  # in an open code span: resumes at its backtick
                rechecks += 1
                fed = mk.end()
                continue
        if quotes is None:
            quotes = QuoteTracker()
            quotes.feed(text[pos:fed])
        if not quotes.quotes_marker(text[fed : mk.start()], mk.group()):
            return False  # an unquoted `<|start|>` ends the body: the runner's
        fed = mk.end()


class MuseGrammar(ChannelGrammar):
    name = "muse"
    quoted_opener = "<|start|>assistant to=get_weather<|message|>"

    def machine(self, plan: ParsePlan, generation: Generation, ctx: CallContext) -> FamilyMachine:
        return MuseMachine(plan, generation, ctx)

    def batch_message(
        self, plan: ParsePlan, text: str, ctx: CallContext
    ) -> tuple[list[str], list[str], list[tuple[str | None, str, str]]] | None:
        return batch_message(plan, text, ctx)


MUSE = MuseGrammar()
TOOL_GRAMMARS: dict[str, ChannelGrammar] = {"muse": MUSE}
REASONING_GRAMMARS: dict[str, ChannelGrammar] = {"muse": MUSE}
