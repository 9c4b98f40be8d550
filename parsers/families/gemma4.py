"""Gemma 4 (`gemma4`, tool and reasoning parser; V1 and V2).

    <|channel>thought\\n REASONING <channel|> ANSWER <|tool_call>call:NAME{ARGS}<tool_call|>...

Calls: `<|tool_call>` opens a region read by `gemma4_call.CallReader` (the ARGS grammar).
Reasoning: `<|channel>` ... `<channel|>`, with the `thought\\n` channel label dropped. Gemma's
reasoning is off unless the request turns thinking on (registry default); when it is off the
reasoning parser does not run at all and the channel markers stay in the content, in both
generations (the family rule of docs/parsers.md wins over the generic V2 marker stripping).

The marker machine (`parsers.machine.MarkerMachine`) does the splitting, hold-back, quote
awareness and jail; this module adds the call scanner, the labelled opener
(`<|channel>thought\n`, so the label is markup) and, for a prompt that prefilled
`<|channel>thought` (or `<|channel>`), the drop of the rest of the label that then starts
the output.
"""

from __future__ import annotations

import re

from parsers.families.base import (
    BatchCall,
    CallArgs,
    CallBegin,
    CallContext,
    CallEnd,
    CallScanner,
    ChannelGrammar,
    Event,
    FamilyMachine,
    Generation,
    ReasoningGrammar,
    ScanStep,
    Text,
    ToolGrammar,
    scanned_region,
)
from parsers.families.gemma4_call import (
    CALL_END,
    CALL_START,
    STRING_DELIM,
    TURN_END,
    CallReader,
)
from parsers.jsonstream import escape_text
from parsers.machine import MarkerMachine
from parsers.plan import ParsePlan

REASONING_OPEN = "<|channel>"
REASONING_CLOSE = "<channel|>"
LABEL = "thought\n"
# the tokens that end Gemma's turn: markup when left in the output (never content)
END_OF_TURN = (TURN_END, "<eos>")


class Gemma4Scanner(CallScanner):
    """The framework's view of one call region (see `gemma4_call.CallReader`)."""

    def __init__(self) -> None:
        self._scan = CallReader()
        self._fed: list[str] = []
        self._begun = False

    def stream(self, text: str) -> str | None:
        if not self._begun:
            return None
        fragment = self._scan.string_run(text)
        if fragment is not None:
            self._fed.append(text)
        return fragment

    def feed(self, text: str) -> ScanStep:
        self._fed.append(text)
        rest = self._scan.feed(text)
        events = self._drain()
        mode = self._scan.mode
        if mode == "done":
            events.append(CallEnd())
            return ScanStep(events, "done", rest)
        if mode == "error":
            if not self._begun:
                return ScanStep([], "reject", "".join(self._fed))
            return ScanStep(events + self._force_close(), "done", rest)
        return ScanStep(events)

    def finish(self) -> ScanStep:
        if not self._begun:
            return ScanStep([], "reject", "".join(self._fed))
        return ScanStep(self._force_close(), "done")

    def _drain(self) -> list[Event]:
        events: list[Event] = []
        name = self._scan.name
        if name is None or not self._scan.committed:
            return events  # fragments wait in the scanner until the call looks real
        if not self._begun:
            self._begun = True
            events.append(CallBegin(name))
        fragment = self._scan.take_fragments()
        if fragment:
            events.append(CallArgs(fragment))
        return events

    def _force_close(self) -> list[Event]:
        # never repaired: the arguments stay what was streamed (docs/parsers.md)
        raw = CALL_START + self._scan.raw + self._scan.pending
        return [CallEnd(complete=False, raw=raw)]


class Gemma4Tools(ToolGrammar):
    name = "gemma4"
    start_markers = (CALL_START,)
    stray_markers = (CALL_END, *END_OF_TURN)
    quoted_opener = CALL_START

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return (CALL_END, TURN_END)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return Gemma4Scanner()

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # the common shape read directly; anything else: the scanner fed the region at once
        stop = text.find(CALL_END, pos)
        found = (
            (_plain_call(text, pos, stop) or _whole_call(text, pos, stop)) if stop != -1 else None
        )
        if found is not None:
            return [(None, *found)], stop + len(CALL_END)
        return scanned_region(self, text, pos, start, ctx)


# --- whole-output batch grammar (parsers.batch) ---
# The common call shape, read with a few regexes: `call:NAME{` then `key:value` pairs split by
# `,`, no blanks anywhere, values a `<|"|>` string, a JSON number, `true`/`false`/`null`
# (lowercase, as the scanner writes them) or a flat `[...]` of those, then `}<tool_call|>`.
# The arguments are what `gemma4_call.CallReader` writes for that text (key and string
# literals by `json_string`/`escape_text`, the rest as written); any other text (blanks, bare
# words, nested objects, other spellings, delimiters the region cuts) is the scanner's.
_W_HEAD = re.compile(r"call:([A-Za-z0-9_.\-]+)\{")
_W_KEY = re.compile(r"([A-Za-z0-9_.\-]+):")
_W_LITERAL = re.compile(
    r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)(?=[,}\]])"
)


def _whole_value(text: str, i: int, stop: int) -> tuple[str, int] | None:
    if text.startswith(STRING_DELIM, i):  # a string runs to the next delimiter
        start = i + len(STRING_DELIM)
        end = text.find(STRING_DELIM, start, stop)
        if end == -1:
            return None
        return '"' + escape_text(text[start:end]) + '"', end + len(STRING_DELIM)
    m = _W_LITERAL.match(text, i, stop)
    return None if m is None else (m.group(1), m.end())


def _whole_call(text: str, pos: int, stop: int) -> tuple[str, str] | None:
    """(name, arguments) of the call at `pos` whose `<tool_call|>` is at `stop`, or None."""
    head = _W_HEAD.match(text, pos, stop)
    if head is None:
        return None
    i = head.end()
    out = ["{"]
    if text.startswith("}", i):
        i += 1
    else:
        while True:
            key = _W_KEY.match(text, i, stop)
            if key is None:
                return None
            # (`json_string` of such a key: nothing in it needs escaping)
            out.append(("," if len(out) > 1 else "") + '"' + key.group(1) + '":')
            i = key.end()
            if text.startswith("[", i):
                i += 1
                items: list[str] = []
                while not text.startswith("]", i):
                    if items:
                        if not text.startswith(",", i):
                            return None
                        i += 1
                    found = _whole_value(text, i, stop)
                    if found is None:
                        return None
                    items.append(found[0])
                    i = found[1]
                out.append("[" + ",".join(items) + "]")
                i += 1
            else:
                found = _whole_value(text, i, stop)
                if found is None:
                    return None
                out.append(found[0])
                i = found[1]
            if text.startswith(",", i):
                i += 1
            elif text.startswith("}", i):
                i += 1
                break
            else:
                return None
    if i != stop:
        return None
    out.append("}")
    return head.group(1), "".join(out)


# The same shape checked by one regex, and when its strings hold nothing to escape but `"`
# (no backslash, no control character) rewritten with string operations instead of value by
# value: split at the delimiters (odd parts are string contents: each can only end at the
# first delimiter, and the rest holds no `<`), keys quoted in the even parts (a key is the run
# before each `:`, after `{` or `,`), `"` escaped in the odd ones, joined by `"`. The result is
# `_whole_call`'s (punctuation and literals as written, strings by `escape_text`).
_P_STR = r'<\|"\|>[^<]*(?:<(?!\|"\|>)[^<]*)*<\|"\|>'
_P_ITEM = rf"(?:{_P_STR}|{_W_LITERAL.pattern})"
_P_VALUE = rf"(?:{_P_ITEM}|\[(?:{_P_ITEM}(?:,{_P_ITEM})*)?\])"
_P_PAIR = rf"[A-Za-z0-9_.\-]+:{_P_VALUE}"
_P_CALL = re.compile(rf"call:([A-Za-z0-9_.\-]+)(\{{(?:{_P_PAIR}(?:,{_P_PAIR})*)?\}})")
_P_ESCAPED = re.compile(r"[\\\x00-\x1f]")  # what `escape_text` writes other than `\"`
_P_KEY_START = re.compile(r"(?<=[{,])(?=[A-Za-z0-9_.\-]+:)")


def _plain_call(text: str, pos: int, stop: int) -> tuple[str, str] | None:
    m = _P_CALL.fullmatch(text, pos, stop)
    if m is None:
        return None
    body = m.group(2)
    if _P_ESCAPED.search(body):
        return None
    parts = body.split(STRING_DELIM)
    outside = _P_KEY_START.sub('"', "\x00".join(parts[0::2])).replace(":", '":')
    parts[0::2] = outside.split("\x00")
    if len(parts) > 1:
        parts[1::2] = "\x00".join(parts[1::2]).replace('"', '\\"').split("\x00")
    return m.group(1), '"'.join(parts)


TOOLS = Gemma4Tools()
# The labelled opener first: the channel label is markup. A bare `<|channel>` opens too.
REASONING = ReasoningGrammar(
    "gemma4",
    open_markers=(REASONING_OPEN + LABEL, REASONING_OPEN),
    close_markers=(REASONING_CLOSE,),
    end_markers=(CALL_START,),  # reasoning-only deployments: a call start ends reasoning
    stray_markers=END_OF_TURN,
)


class PrefillLabel(FamilyMachine):
    """Output that starts inside a prefilled channel may begin with the rest of its label.

    A prompt ending `<|channel>thought` leaves the label's newline to the output, one ending
    `<|channel>` the whole `thought\n`: drop it from the first reasoning text. Only the start
    of the output is concerned, and the decision depends on nothing but the text.
    """

    _LABELS = (LABEL, "\n")

    def __init__(self, inner: FamilyMachine) -> None:
        self._inner = inner
        self._held: str | None = ""  # start of the first reasoning text; None once decided

    def feed(self, text: str) -> list[Event]:
        return self._filter(self._inner.feed(text), final=False)

    def finish(self, reason: str = "stop") -> list[Event]:
        return self._filter(self._inner.finish(reason), final=True)

    def _filter(self, events: list[Event], final: bool) -> list[Event]:
        if self._held is None:
            return events
        out: list[Event] = []
        for i, ev in enumerate(events):
            if isinstance(ev, Text) and not ev.text:
                continue
            if isinstance(ev, Text) and ev.channel == "reasoning":
                self._held += ev.text
                if self._decide(out, ended=False):
                    out.extend(events[i + 1 :])
                    return out
                continue
            self._decide(out, ended=True)
            out.extend(events[i:])
            return out
        if final:
            self._decide(out, ended=True)
        return out

    def _decide(self, out: list[Event], ended: bool) -> bool:
        held = self._held
        if held is None:
            return True
        for label in self._LABELS:
            if held.startswith(label):
                held = held[len(label) :]
                break
        else:
            if not ended and any(label.startswith(held) for label in self._LABELS):
                return False  # may still become a label
        self._held = None
        if held:
            out.append(Text(held, "reasoning"))
        return True


class Gemma4Grammar(ChannelGrammar):
    """Registered for both parser names: the marker machine, built the Gemma 4 way."""

    name = "gemma4"
    quoted_opener = CALL_START

    def machine(self, plan: ParsePlan, generation: Generation, ctx: CallContext) -> FamilyMachine:
        tool = TOOLS if plan.tool_parser is not None else None
        # The thought channel is always read (its markers are special tokens); without a
        # reasoning parser (`plan.reasoning_channel` False) its text is content.
        reasoning = REASONING if plan.reasoning_parser is not None else None
        inner = MarkerMachine(plan, generation, tool, reasoning, ctx)
        if reasoning is None or not plan.start_in_reasoning:
            return inner
        return PrefillLabel(inner)

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_grammars(
        self, plan: ParsePlan
    ) -> tuple[ToolGrammar | None, ReasoningGrammar | None] | None:
        # `machine` without the prefilled-label filter
        reasoning = REASONING if plan.reasoning_parser is not None else None
        if reasoning is not None and plan.start_in_reasoning:
            return None
        return (TOOLS if plan.tool_parser is not None else None), reasoning


GEMMA4 = Gemma4Grammar()
TOOL_GRAMMARS: dict[str, ChannelGrammar] = {"gemma4": GEMMA4}
REASONING_GRAMMARS: dict[str, ChannelGrammar] = {"gemma4": GEMMA4}
