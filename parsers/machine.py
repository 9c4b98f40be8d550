"""The state machine for marker families, in both generations.

One machine splits reasoning, content and call regions; the family's `CallScanner` reads the
calls. The generation switches the behaviours docs/parsers.md "V1 and V2" names:

* V2 (unified): quote-aware (markers in quotes/code are prose), calls stream through the
  scanner as they arrive, tool_choice `none` strips call markup, thinking off removes the
  reasoning markers and keeps their text as content.
* V1 (legacy jail): no quote awareness; from a call start marker the text is jailed until the
  family's end marker (or end of output), then parsed whole with the same scanner; if nothing
  parses, the jailed text is content. tool_choice `none` means no tool parsing at all (markup
  stays content); thinking off skips the reasoning parser (markers stay content).

Both hold back only a possible marker prefix at a chunk edge and never re-scan text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Literal

from parsers.families.base import (
    PIECE,
    CallContext,
    CallEnd,
    CallScanner,
    Channel,
    Event,
    FamilyMachine,
    Generation,
    ReasoningGrammar,
    ScanStep,
    Text,
    ToolGrammar,
)
from parsers.guided import GuidedScanner
from parsers.plan import ParsePlan
from parsers.scan import BlankRuns, MarkerSet, QuoteTracker
from parsers.types import Delta, content_delta, reasoning_delta

if TYPE_CHECKING:
    from parsers.emit import Emitter

Mode = Literal["content", "reasoning", "call", "jail"]
_WS = " \t\r\n"
_BLANKS = " \t\r"  # blanks that do not change quote state (a newline does)
# Held-back text at least this long takes the general path, where a run of blanks is held in
# pieces (`_hold_blanks`); shorter holds (a marker prefix, a few blanks) are cheap to rescan.
_LONG_HELD = 64
_new = object.__new__
_NO_MARKERS = MarkerSet(())


# What a machine's marker scanning needs, the same for every machine of one grammar
# configuration (shared, never changed, built once: ~15 us per parser otherwise): call starts,
# reasoning openers, closers and ends as sets; marker sets, prose fast-path and marker-start
# regexes by mode; the openers as a leading-markup set. (A plain tuple: a NamedTuple class
# costs ~1 ms at import, in every isolated test's child.)
if TYPE_CHECKING:
    _Tables = tuple[
        frozenset[str],
        frozenset[str],
        frozenset[str],
        frozenset[str],
        dict[str, MarkerSet],
        dict[str, re.Pattern[str]],
        dict[str, re.Pattern[str]],
        MarkerSet,
        dict[str, frozenset[str]],
        frozenset[str],
    ]


@lru_cache(maxsize=256)
def _marker_tables(
    starts: tuple[str, ...],
    opens: tuple[str, ...],
    closes: tuple[str, ...],
    end_markers: tuple[str, ...],
    reasoning_on: bool,
    strip_reasoning_markup: bool,
    stray: tuple[str, ...] = (),
    pairing: tuple[str, ...] = (),
) -> _Tables:
    if reasoning_on:
        content_markers = (*starts, *opens)
    elif strip_reasoning_markup:
        content_markers = (*starts, *opens, *closes)  # no reasoning channel: markup
    else:
        content_markers = starts
    # reasoning ends (not consumed) at these when they are not call starts already
    ends = tuple(m for m in end_markers if m not in starts)
    # Protocol tokens out of place (an unpaired close, a section end, a message end, a
    # reasoning close in the answer or an opener inside reasoning) are markup: dropped.
    taken = {*starts, *opens, *closes, *ends}
    loose = tuple(m for m in stray if m not in taken)
    strays = {
        "content": frozenset((*loose, *(closes if reasoning_on else ()))),
        "reasoning": frozenset((*loose, *opens)),
    }
    pairing = tuple(m for m in pairing if m not in taken) if loose else ()
    markers = {
        "content": MarkerSet((*content_markers, *strays["content"], *pairing)),
        "reasoning": MarkerSet((*closes, *starts, *ends, *strays["reasoning"], *pairing)),
    }
    # Characters that may matter to the prose scan: marker starts, quote/code characters
    # and newlines; a chunk without any of them is emitted as it is (fast path). None when
    # a marker can start with a blank: the fast path joins held-back blanks to the next
    # chunk.
    blank_markers = any(c in _WS for ms in markers.values() for c in ms.first_chars)
    fast_re = {
        mode: re.compile("[" + re.escape(ms.first_chars + "\"'`\n") + "]")
        for mode, ms in markers.items()
        if not blank_markers
    }
    # only marker starts: a chunk without them changes no more than the quote state
    marker_re = {
        mode: re.compile("[" + re.escape(ms.first_chars) + "]" if ms else "(?!)")
        for mode, ms in markers.items()
    }
    return (
        frozenset(starts),
        frozenset(opens),
        frozenset(closes),
        frozenset(ends),
        markers,
        fast_re,
        marker_re,
        MarkerSet(opens),
        strays,
        frozenset(pairing),
    )


def marker_tables_for(
    plan: ParsePlan,
    generation: Generation,
    tool: ToolGrammar | None,
    reasoning: ReasoningGrammar | None,
) -> _Tables:
    """The shared marker tables of a machine for `plan` (also what the whole-output batch
    path, `parsers.batch`, scans with)."""
    tool = tool if plan.parse_tools else None
    # V1 with tool_choice none: no tool parsing at all
    tools_on = tool is not None and (generation == 2 or plan.tool_mode != "none")
    return _marker_tables(
        tool.start_markers if (tools_on and tool is not None) else (),
        reasoning.open_markers if reasoning else (),
        reasoning.close_markers if reasoning else (),
        reasoning.end_markers if reasoning else (),
        reasoning is not None and plan.reasoning_channel,
        reasoning is not None,
        (*(tool.stray_markers if tools_on and tool else ()),
         *(reasoning.stray_markers if reasoning else ())),
        tool.pairing_openers if tools_on and tool else (),
    )  # fmt: skip


class MarkerMachine(FamilyMachine):
    def __init__(
        self,
        plan: ParsePlan,
        generation: Generation,
        tool: ToolGrammar | None,
        reasoning: ReasoningGrammar | None,
        ctx: CallContext,
    ) -> None:
        self._v2 = generation == 2
        self._ctx = ctx
        self._tool = tool if plan.parse_tools else None
        self._forced = plan.parse_tools and plan.tool_mode in ("required", "named")
        self._named = plan.named_tool if plan.tool_mode == "named" else None
        reasoning_on = reasoning is not None and plan.reasoning_channel
        # (Tables per mode are dicts, not attributes: the machine keeps to at most 30
        # attributes, beyond that CPython stores them in a plain dict and every attribute
        # access gets slower.)
        (
            self._starts,
            self._opens,
            self._closes,
            self._reasoning_ends,
            self._markers,
            self._fast_re,
            self._marker_re,
            lead_opens,
            self._stray,
            self._pairing,
        ) = marker_tables_for(plan, generation, tool, reasoning)
        self._strip_reasoning = not reasoning_on
        self._mode: Mode = "reasoning" if (reasoning_on and plan.start_in_reasoning) else "content"
        # Output that starts inside reasoning (forced or prefilled) may still begin with the
        # opener (Kimi K2.5 writes `<think>`): a leading opener (after blanks) is markup.
        self._lead_opens = lead_opens if self._mode == "reasoning" else _NO_MARKERS
        self._quotes = QuoteTracker() if self._v2 else None
        self._buf = ""  # held back: a possible marker prefix, or leading whitespace (guided)
        # Blank chunks fed while `_buf` is only blanks, kept apart (see `_hold_blanks`)
        self._more_blanks: list[str] = []
        self._answer_started = False
        # Whitespace right before a call start, and between a call and the end of output, is
        # markup, not content (`text. <tool_call>` gives content `text.`).
        self._after_call = False
        self._paired = 0  # rejected call regions whose close is still to come (text, not markup)
        # call region state
        self._scanner: CallScanner | None = None
        self._blanks = BlankRuns()  # a run of blank chunks inside a call region
        self._blank_wait = self._blanks.wait  # (its waiting list, for the per-chunk test)
        # the current region's start marker with the blanks before it (markup; text again if
        # the region is rejected)
        self._start = ""
        self._return: Literal["content", "reasoning"] = "content"
        # V1 jail state
        self._jail: list[str] = []
        self._jail_end = _NO_MARKERS
        self._jail_tail = ""  # last characters of the jail, to find an end marker across chunks
        self._jail_scanner: CallScanner | None = None  # reads the region as it arrives
        self._jail_events: list[Event] = []  # its events, held until the region is decided
        self._push: Callable[[list[Event]], list[Delta]] = _no_push
        self._args: Callable[[str], list[Delta]] = _no_feed
        self._plain_re = self._plain_state()

    # -- public --

    def feed(self, text: str) -> list[Event]:
        if (self._more_blanks or len(self._buf) >= _LONG_HELD) and self._hold_blanks(text):
            return []
        events: list[Event] = []
        data, self._buf = self._buf + text, ""
        self._run(data, events, final=False)
        self._plain_re = self._plain_state()
        return events

    def _hold_blanks(self, text: str) -> bool:
        """True when `text` (only blanks) just joins held-back blanks. In prose a held run of
        blanks stays held while more blanks come (they may precede a call start, and no marker
        begins with a blank), so rescanning the whole run with each chunk was quadratic: a
        model streaming 20,000 spaces cost seconds. The chunks wait in a list, joined once when
        something else arrives; the result is what feeding them one by one gives."""
        more = self._more_blanks
        if more:
            if text and not text.strip(_WS):
                more.append(text)
                return True
            self._buf += "".join(more)
            more.clear()
            return False
        buf = self._buf
        if (
            len(buf) >= _LONG_HELD
            and self._mode in ("content", "reasoning")
            and text
            and not text.strip(_WS)
            and not buf.strip(_WS)
        ):
            more.append(text)
            return True
        return False

    def fast_feed(
        self, emitter: Emitter, general: Callable[[str], list[Delta]]
    ) -> Callable[[str], list[Delta]]:
        """The chunk-to-deltas function with the streaming fast paths (`deltas`) for this
        machine's `emitter`. (`general` is not needed: `deltas` itself sends other chunks
        through `feed` and `emitter.push`, long ones in pieces; the runner binds it only until
        finish.)"""
        self._push = emitter.push
        self._args = emitter.args
        return self.deltas

    def deltas(self, chunk: str) -> list[Delta]:
        """`push(feed(text))` (`push`: the Emitter's), with the per-feed work of the common
        streaming cases cut short: in plain prose, a chunk without any character that can
        start a marker is emitted as it is (the quote tracker sees it), only trailing blanks
        held back (they may precede a call start) — what `_scan_text` does with it, without the
        event and emitter round trip (one Text is one Delta); a marker prefix still arriving
        stays held back; in a call region the chunk goes straight to the scanner. Per
        few-character feed, that round trip is most of the cost. (`chunk`: the name
        `StreamParser.feed` gives its argument, since this function is bound as it.)
        """
        text = chunk
        rx = self._plain_re
        if rx is not None and rx.search(text) is None and 0 < len(text) <= PIECE:
            # the commonest chunk: prose without a character that matters, after nothing or
            # after one blank held back (blanks may precede a call start)
            buf = self._buf
            if not buf or buf == " ":
                if buf:
                    text = " " + text
                if self._starts and text[-1] in _BLANKS:
                    body = text.rstrip(_BLANKS)
                    self._buf = text[len(body) :]
                    if not body:
                        return []
                    text = body
                elif buf:
                    self._buf = ""
                quotes = self._quotes
                if quotes is not None:
                    if quotes.sq_pending or quotes.ticks:
                        quotes.feed(text)
                    else:
                        quotes.prev = text[-1]  # what feed() does with such text
                d = _new(Delta)  # built like types.content_delta, inline (per-feed hot path)
                fields = d.__dict__
                if self._mode == "content":
                    fields["content"] = text
                    fields["reasoning_content"] = None
                else:
                    fields["content"] = None
                    fields["reasoning_content"] = text
                fields["tool_calls"] = []
                return [d]
        push = self._push
        if not text or len(text) > PIECE or (self._buf and len(self._buf) >= _LONG_HELD):
            # (a long held run, as while blanks wait in `_more_blanks`: the fast paths below
            # rescan what is held; the first one above only takes chunks after nothing or one
            # held blank)
            return feed_in_pieces(self.feed, push, text)
        if rx is not None:
            buf = self._buf
            # plain: not even a quote, backtick or newline (nor in held-back blanks)
            plain = rx.search(text) is None and not (buf and buf.strip(_BLANKS))
            if plain or (
                self._marker_re[self._mode].search(text) is None and not (buf and buf.strip(_WS))
            ):
                if buf:
                    text = buf + text
                if self._starts and text[-1] in _WS:
                    body = text.rstrip(_WS)
                    self._buf = text[len(body) :]
                    if not body:
                        return []
                else:
                    body = text
                    self._buf = ""
                quotes = self._quotes
                if quotes is not None:
                    if plain and not (quotes.sq_pending or quotes.ticks):
                        quotes.prev = body[-1]  # what feed() does with such text
                    else:
                        quotes.feed(body)
                if self._mode == "content":
                    return [content_delta(body)]
                return [reasoning_delta(body)]
            if buf:
                # a held-back marker prefix (after blanks that go with a call start) that is
                # still only a prefix: `_scan_text` would hold all of it back again
                data = buf + text
                markers = self._markers[self._mode]
                if (
                    markers.is_partial(data.lstrip(_WS) if self._starts else data)
                    and markers.search(data) is None
                ):
                    self._buf = data
                    return []
        elif (
            self._mode == "call"
            and not self._buf
            and not self._blank_wait
            and (text[-1] not in _WS or text.strip(_WS))  # blank chunks go through `_scan`
        ):
            sc = self._scanner
            assert sc is not None
            fragment = sc.stream(text)
            if fragment is not None:
                return self._args(fragment)
            res = self._scan(sc, text, False)
            if res.status == "more":
                return push(res.events)
            events: list[Event] = []
            _, rest = self._region_result(res, events)
            self._run(rest, events, final=False)
            self._plain_re = self._plain_state()
            return push(events)
        return push(self.feed(text))

    def _plain_state(self) -> re.Pattern[str] | None:
        """The fast-path regex when the state is plain prose, else None (recomputed after
        every full scan; the fast path itself changes none of these)."""
        mode = self._mode
        rx = self._fast_re.get(mode)  # (content and reasoning only)
        if (
            rx is not None
            and not self._lead_opens.markers
            and not self._after_call
            and (self._answer_started or not self._forced or mode == "reasoning")
        ):
            return rx
        return None

    def finish(self, reason: str = "stop") -> list[Event]:
        events: list[Event] = []
        data, self._buf = self._buf + "".join(self._more_blanks), ""
        self._more_blanks.clear()
        self._run(data, events, final=True)
        return events

    # -- machinery --

    def _run(self, data: str, events: list[Event], final: bool) -> None:
        while True:
            if self._mode == "call":
                done, data = self._run_call(data, events, final)
                if not done:
                    return
                continue
            if self._mode == "jail":
                done, data = self._run_jail(data, events, final)
                if not done:
                    return
                continue
            if not data:
                return
            data = self._scan_text(data, events, final)
            if not data and self._mode in ("content", "reasoning"):
                return

    def _emit(self, events: list[Event], text: str, channel: Channel) -> None:
        if text:
            if self._quotes is not None:
                self._quotes.feed(text)
            events.append(Text(text, channel))

    def _scan_text(self, data: str, events: list[Event], final: bool) -> str:
        """Scan prose in content/reasoning mode; returns text left for the next mode."""
        mode = self._mode
        assert mode in ("content", "reasoning")
        channel: Channel = mode
        pos = 0
        n = len(data)
        if mode == "content" and self._forced and not self._answer_started:
            j = 0
            while j < n and data[j] in _WS:
                j += 1
            if j == n and not final:
                self._buf = data  # only whitespace so far: the first real char decides
                return ""
            opens = self._markers["content"] if not self._strip_reasoning else None
            lead = opens.match_at(data, j) if opens is not None and j < n else None
            if lead is not None and lead in self._opens:
                pass  # a reasoning block comes first; the answer starts after it
            elif opens is not None and not final and self._is_partial_open(data[j:]):
                self._buf = data
                return ""
            else:
                self._answer_started = True
                if j < n and data[j] in "[{":
                    # guided JSON of a forced choice; the leading whitespace is its markup
                    # (given back, not a stale one, if the JSON is rejected)
                    self._begin_region(data[:j], lambda: GuidedScanner(self._named), "content", ())
                    return data[j:]
        if mode == "content":
            pass
        elif self._lead_opens:
            j = 0
            while j < n and data[j] in _WS:
                j += 1
            if not final and (j == n or self._lead_opens.is_partial(data[j:])):
                self._buf = data  # blanks or a cut opener so far: the next chars decide
                return ""
            opener = self._lead_opens.match_at(data, j)
            self._lead_opens = _NO_MARKERS
            if opener is not None:
                return data[j + len(opener) :]
        markers = self._markers[mode]
        quotes = self._quotes
        strip_ws = bool(self._starts)
        if self._after_call and mode == "content":
            if not data.strip(_WS):
                if final:
                    return ""  # blanks between the last call and the end of output
                self._buf = data
                return ""
            self._after_call = False
        fed = pos  # the quote tracker has seen data[:fed]
        while True:
            m = markers.search(data, pos)
            if m is None:
                if final:
                    return self._hold(
                        data, self._cut_marker(data, pos, fed), pos, fed, False, events, channel
                    )
                hold = markers.holdback(data, pos)
                return self._hold(data, hold, pos, fed, strip_ws, events, channel)
            start, end = m.start(), m.end()
            marker = m.group()
            if not final and n - start < markers.maxlen and markers.is_partial(data[start:]):
                # a complete marker that a longer one may still extend (`<|channel>` and
                # `<|channel>thought\n`): wait until the next characters decide
                return self._hold(data, start, pos, fed, strip_ws, events, channel)
            if quotes is not None:
                before, fed = data[fed:start], start
                if quotes.quotes_marker(before, marker):
                    pos = fed = end
                    continue
            rest = data[end:]
            if marker in self._starts:
                cut = start
                while cut > 0 and data[cut - 1] in _WS:
                    cut -= 1
                if cut > 0:
                    events.append(Text(data[:cut], channel))
                tool = self._tool
                assert tool is not None
                ends = tool.jail_end_markers(marker)
                scanner = partial(tool.scanner, marker, self._ctx)
                self._begin_region(data[cut:end], scanner, mode, ends)
                return rest
            if marker in self._pairing:
                # a tag opener in prose: text, and the next out-of-place close pairs it
                self._paired += 1
                if quotes is not None:
                    quotes.feed(marker)
                pos = fed = end
                continue
            if start > 0:
                events.append(Text(data[:start], channel))
            if quotes is not None:
                quotes.reset()
            if marker in self._stray[mode]:
                if self._paired:
                    # the close of a region that did not parse: part of its verbatim text
                    self._paired -= 1
                    events.append(Text(marker, channel))
                return rest  # else a protocol token out of place: markup (docs/parsers.md)
            if mode == "reasoning" and marker in self._reasoning_ends:
                self._mode = "content"
                return data[start:]  # the marker is answer text (no tool parser to read it)
            if mode == "content" and marker in self._opens and not self._strip_reasoning:
                self._mode = "reasoning"
            elif mode == "reasoning" and marker in self._closes:
                self._mode = "content"
            # else: V2 with thinking off, a reasoning marker in the answer is removed
            return rest

    def _hold(
        self,
        data: str,
        cut: int,
        pos: int,
        fed: int,
        strip_ws: bool,
        events: list[Event],
        channel: Channel,
    ) -> str:
        """`data[:cut]` is text, the rest waits for the next feed; with `strip_ws` the blanks
        before `cut` (back to `pos`) wait too, since they may precede a call start. The quote
        tracker has seen `data[:fed]`."""
        if strip_ws:
            while cut > pos and data[cut - 1] in _WS:
                cut -= 1
        if self._quotes is not None:
            self._quotes.feed(data[fed:cut])
        if cut > 0:
            events.append(Text(data[:cut], channel))
        self._buf = data[cut:]
        return ""

    def _cut_marker(self, data: str, pos: int, fed: int) -> int:
        """End of output: where a marker cut by it starts (it is markup, dropped), else
        len(data). Only a tail of 3 or more characters with a letter is a cut marker (`<`,
        `</`, `<|` alone are common in prose and code); a quoted one is prose (V2)."""
        n = len(data)
        cut = self._markers[self._mode].holdback(data, pos)
        if n - cut < 3 or not any(c.isalpha() for c in data[cut:]):
            return n
        quotes = self._quotes
        if quotes is not None:
            probe = quotes.copy()
            probe.feed(data[fed:cut])
            if probe.quoted(data[cut]):
                return n
        return cut

    def _is_partial_open(self, text: str) -> bool:
        return any(o.startswith(text) and o != text for o in self._opens)

    def _begin_region(
        self,
        start: str,
        factory: Callable[[], CallScanner],
        ret: Literal["content", "reasoning"],
        jail_end: tuple[str, ...],
    ) -> None:
        self._start = start
        self._return = ret
        self._blanks.reset()
        if self._v2:
            self._scanner = factory()
            self._mode = "call"
        else:
            self._jail = []
            self._jail_tail = ""
            self._jail_end = MarkerSet(jail_end)
            self._jail_scanner = factory()
            self._jail_events = []
            self._mode = "jail"

    def _after_region(self) -> None:
        self._mode = "content"
        self._after_call = True
        self._scanner = None
        if self._quotes is not None:
            self._quotes.reset()

    def _run_call(self, data: str, events: list[Event], final: bool) -> tuple[bool, str]:
        sc = self._scanner
        assert sc is not None
        res = self._scan(sc, data, final)
        if res.status == "more" and final:
            end = sc.finish()
            res = ScanStep(res.events + end.events, end.status, end.rest)
        return self._region_result(res, events)

    def _scan(self, sc: CallScanner, data: str, final: bool) -> ScanStep:
        """`sc.feed(data)`, a long run of blank chunks in doubling batches (`BlankRuns`)."""
        blanks = self._blanks
        if final:
            data = blanks.flush() + data
        else:
            taken = blanks.take(data)
            if taken is None:
                return ScanStep([])
            data = taken
        return sc.feed(data) if data else ScanStep([])

    def _region_result(self, res: ScanStep, events: list[Event]) -> tuple[bool, str]:
        """Takes the scanner's result: (whether the region is over, the text after it)."""
        events.extend(res.events)
        if res.status == "more":
            return False, ""
        if res.status == "done":
            self._after_region()
            return True, res.rest
        # reject: the start marker was prose after all; the next out-of-place close pairs it
        self._paired += 1
        self._mode = self._return
        self._scanner = None
        self._emit(events, self._start, self._return)
        return True, res.rest

    def _run_jail(self, data: str, events: list[Event], final: bool) -> tuple[bool, str]:
        """V1: the region runs from its start marker to the first jail end marker (or the end
        of output) and is parsed as a whole: its calls go out only once it is decided, and a
        region without a complete call (or rejected) is content, verbatim.

        The scanner reads the region as it arrives (chunk invariance makes that the same as one
        feed of the whole region at its end), with its events held here until the region is
        decided. Jailing the text and parsing it at the end made a run of calls without their
        end marker quadratic: each parse gave the rest of the output back to be jailed
        again."""
        ends = self._jail_end
        rest = ""
        closed = False
        if ends and data:
            window = self._jail_tail + data
            m = ends.search(window)
            if m is not None:
                cut = m.end() - len(self._jail_tail)
                data, rest = data[:cut], data[cut:]
                closed = True
            else:
                keep = max(ends.maxlen - 1, 0)
                self._jail_tail = window[-keep:] if keep else ""
        if data:
            self._jail.append(data)
        sc = self._jail_scanner
        if sc is not None:
            res = self._scan(sc, data, final or closed)
            if res.status == "more" and (final or closed):
                end = sc.finish()
                res = ScanStep(res.events + end.events, end.status, end.rest)
            self._jail_events += res.events
            if res.status == "done" and any(
                isinstance(e, CallEnd) and e.complete for e in self._jail_events
            ):
                events += self._jail_events
                self._jail = []
                self._jail_events = []
                self._after_region()
                return True, res.rest + rest
            if res.status != "more":
                # rejected, or over without a complete call: the region is content up to its
                # end, read no further
                self._jail_scanner = None
                self._jail_events = []
        if not closed and not final:
            return False, ""
        self._jail.insert(0, self._start)
        events.append(Text("".join(self._jail)))  # (one copy of a long region, not two)
        self._jail = []
        self._jail_events = []
        self._jail_scanner = None
        self._paired += 1  # not a call: its close, if still to come, is its text
        self._after_region()
        return True, rest


def _no_push(events: list[Event]) -> list[Delta]:
    raise RuntimeError("deltas() before fast_feed()")


def _no_feed(text: str) -> list[Delta]:
    raise RuntimeError("deltas() before fast_feed()")


def feed_in_pieces(
    feed: Callable[[str], list[Event]], push: Callable[[list[Event]], list[Delta]], text: str
) -> list[Delta]:
    """`push(feed(text))` in pieces of at most `PIECE` characters: a machine may copy "the
    rest of this chunk" once per marker, which must not make one huge chunk quadratic. Chunk
    invariance makes the result the same. (Nothing for "".)"""
    if len(text) <= PIECE:
        return push(feed(text)) if text else []
    out: list[Delta] = []
    for i in range(0, len(text), PIECE):
        out += push(feed(text[i : i + PIECE]))
    return out
