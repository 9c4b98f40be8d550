"""GLM 4.5 / 4.6 / 4.7 (`glm47`, alias `glm45`; reasoning `glm45`).

`<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>`; GLM-4.5/4.6 put
newlines and indentation between the tags (any blanks are accepted there); a call without
arguments is `<tool_call>NAME</tool_call>`; calls are concatenated, no section wrapper.
Values: newlines next to the tags trimmed, no entity decoding; a declared `string` parameter
is the text as written; otherwise text starting with `{`, `[` or `"` is JSON (a string when it
does not parse), then the schema type decides; else a string kept as written.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from parsers.families.base import (
    AnyReasoningGrammar,
    AnyToolGrammar,
    BatchCall,
    CallArgs,
    CallContext,
    CallScanner,
    Event,
    ReasoningGrammar,
    ScanStep,
    ToolGrammar,
    scanned_region,
)
from parsers.families.glm_facts import FACTS
from parsers.families.xmlargs import (
    ArgsJson,
    RawValue,
    StringValue,
    TagBuffer,
    Trim,
    ValueSink,
    begin_call,
    end_call,
)
from parsers.jsonstream import dumps
from parsers.scan import MarkerSet
from parsers.schema import convert_value, is_string_type, loads_finite, primary_type

TOOL_CALL = "<tool_call>"
TOOL_CALL_END = "</tool_call>"
ARG_KEY = "<arg_key>"
ARG_KEY_END = "</arg_key>"
ARG_VALUE = "<arg_value>"
ARG_VALUE_END = "</arg_value>"

_NAME_END = MarkerSet((ARG_KEY, TOOL_CALL_END))
_BODY_TAGS = MarkerSet((ARG_KEY, TOOL_CALL_END))
_KEY_END = MarkerSet((ARG_KEY_END,))
_VALUE_TAG = MarkerSet((ARG_VALUE,))
_VALUE_END = MarkerSet((ARG_VALUE_END, TOOL_CALL_END))
_MAX_NAME = 256
# unpaired closes and the tokens that end GLM's turn: markup outside a call
GLM_STRAY = (
    TOOL_CALL_END,
    ARG_KEY_END,
    ARG_VALUE_END,
    "<|user|>",
    "<|observation|>",
    "<|endoftext|>",
)
_TRIM: Trim = "newlines"


def _json_or_text(text: str) -> Any:
    """JSON, else the text; values JSON cannot carry (`1e999`, `NaN`) keep the text."""
    try:
        return loads_finite(text)
    except ValueError:
        pass
    if '\\"' in text:
        # JSON written with escaped quotes (`[{\"id\": \"1\"}]`, as GLM-4.6 sometimes does):
        # unescape once as a JSON string body, then parse (as SGLang does)
        try:
            inner = json.loads('"' + text + '"')
            if isinstance(inner, str):
                return loads_finite(inner)
        except ValueError:
            pass
    return text


def _typed(text: str, schema: Any) -> Any:
    """Schema typing; an `array` value that is not JSON or a literal is split at commas
    (`rust, python, go` -> three strings, as Dynamo does)."""
    value = convert_value(text, schema)
    if value is text and primary_type(schema) == "array" and text.strip():
        return [part.strip() for part in text.split(",")]
    return value


_LITERAL_NL = "\\n"  # a backslash and `n`: some GLM outputs put it between the tags


def _after_layout(text: str, tags: MarkerSet) -> tuple[int, str | Literal[False] | None]:
    """Like `TagBuffer.starts_after_blanks`, also skipping literal `\\n` pairs (SGLang accepts
    `<tool_call>f\\n<arg_key>…</arg_key>\\n<arg_value>…`): (layout length, tag/None/False)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif text.startswith(_LITERAL_NL, i):
            i += 2
        elif c == "\\" and i + 1 == n:
            return i, None  # may still become a literal `\\n`
        else:
            break
    if i == n:
        return i, None
    return i, tags.starts_at(text, i)


def _strip_name(raw: str) -> str:
    name = raw.strip()
    while name.endswith(_LITERAL_NL):
        name = name[: -len(_LITERAL_NL)].rstrip()
    return name


class _PendingValue:
    """Waits for the first character of a value to choose how it is written."""

    def __init__(self, prefix: str, schema: Any) -> None:
        self.prefix = prefix
        self.schema = schema
        self.parts: list[str] = []

    def choose(self, first: str) -> ValueSink:
        t = primary_type(self.schema)
        if is_string_type(t):
            # a declared string is the text as written, even when it looks like JSON
            return StringValue(self.prefix, trim=_TRIM)
        if first in '{["':
            return RawValue(self.prefix, _json_or_text, trim=_TRIM)
        if t is None:
            return StringValue(self.prefix, trim=_TRIM)
        schema = self.schema
        return RawValue(self.prefix, lambda s: _typed(s, schema), trim=_TRIM)


class GlmScanner(CallScanner):
    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self._buf = TagBuffer()
        self._fed: list[str] = []
        self._state = "name"
        self._name = ""
        self._args = ArgsJson()
        self._key: list[str] = []  # pieces (a long run of blanks must not be copied per chunk)
        self._pending: _PendingValue | None = None
        self._sink: ValueSink | None = None
        self._committed = False

    def _raw(self) -> str:
        return TOOL_CALL + "".join(self._fed)

    def stream(self, text: str) -> str | None:
        sink = self._sink
        if self._state == "value" and not self._buf.text and _VALUE_END.free(text):
            # streaming a value: no tag can start in this chunk (what `_run` does with it)
            assert sink is not None
            self._fed.append(text)
            return sink.feed(text)
        return None

    def feed(self, text: str) -> ScanStep:
        out = self.stream(text)
        if out is not None:
            return ScanStep([CallArgs(out)] if out else [])
        self._fed.append(text)
        self._buf.add(text)
        return self._run(final=False)

    def finish(self) -> ScanStep:
        res = self._run(final=True)
        if res.status != "more":
            return res
        if not self._committed:
            return ScanStep([], "reject", "".join(self._fed))
        events = res.events
        sink = None
        if self._state in ("value", "pending"):
            sink = self._sink
            if sink is None and self._pending is not None:
                sink = StringValue(self._pending.prefix, trim=_TRIM)
            if sink is not None:
                sink.feed(self._buf.rest())
        end_call(events, sink, complete=False, raw=self._raw())
        return ScanStep(events, "done")

    def _abort(self, events: list[Event]) -> ScanStep:
        """Malformed after the call went out: close it; the rest is content."""
        end_call(events, complete=False, raw=self._raw())
        return ScanStep(events, "done", self._buf.rest())

    def _run(self, final: bool) -> ScanStep:
        events: list[Event] = []
        buf = self._buf
        while True:
            st = self._state
            if st == "name":
                m = _NAME_END.search(buf.text)
                if m is None:
                    # still no tag: give up early when this cannot be a name
                    seen = buf.text[: _NAME_END.holdback(buf.text)]
                    core = seen.strip()
                    if "<" in seen or "\n" in core or len(core) > _MAX_NAME:
                        return ScanStep([], "reject", "".join(self._fed))
                    return ScanStep(events)
                limit = m.start()
                name = _strip_name(buf.text[:limit])
                if not name or "<" in name or "\n" in name or len(name) > _MAX_NAME:
                    return ScanStep([], "reject", "".join(self._fed))
                buf.take(limit)
                self._name = name
                begin_call(events, name)
                self._committed = True
                self._state = "body"
            elif st == "body":
                blanks, tag = _after_layout(buf.text, _BODY_TAGS)
                if tag is None:
                    return ScanStep(events)
                if tag is False:
                    return self._abort(events)
                buf.take(blanks + len(tag))
                if tag == TOOL_CALL_END:
                    end_call(events)
                    return ScanStep(events, "done", buf.rest())
                self._state = "key"
            elif st == "key":
                before, tag = buf.until(_KEY_END, final)
                if before:
                    self._key.append(before)
                if tag is None:
                    # Judged when its close arrives, never while it grows: a split then
                    # cannot change where the call ends (the pieces make waiting linear).
                    return ScanStep(events)
                if len("".join(self._key).strip()) > _MAX_NAME:
                    return self._abort(events)
                buf.take(len(tag))
                self._state = "value_tag"
            elif st == "value_tag":
                blanks, tag = _after_layout(buf.text, _VALUE_TAG)
                if tag is None:
                    return ScanStep(events)
                if tag is False:
                    return self._abort(events)
                buf.take(blanks + len(tag))
                key = "".join(self._key).strip()
                self._key = []
                prefix = self._args.key(key)
                self._pending = _PendingValue(prefix, self._ctx.param_schema(self._name, key))
                self._state = "pending"
            elif st == "pending":
                pend = self._pending
                assert pend is not None
                stripped = buf.text.lstrip(" \t\r\n")  # the first visible character decides
                m = _VALUE_END.search(buf.text)
                if m is not None and len(buf.text) - len(stripped) >= m.start():
                    # empty value
                    self._sink = StringValue(pend.prefix, trim=_TRIM)
                elif stripped and not _VALUE_END.is_partial(stripped):
                    self._sink = pend.choose(stripped[0])
                elif not final:
                    return ScanStep(events)
                else:
                    self._sink = StringValue(pend.prefix, trim=_TRIM)
                self._pending = None
                self._state = "value"
            elif st == "value":
                sink = self._sink
                assert sink is not None
                before, tag = buf.until(_VALUE_END, final)
                out = sink.feed(before)
                if out:
                    events.append(CallArgs(out))
                if tag is None:
                    return ScanStep(events)
                events.append(CallArgs(sink.end()))
                self._sink = None
                if tag == ARG_VALUE_END:
                    buf.take(len(tag))
                self._state = "body"


class GlmGrammar(ToolGrammar):
    name = "glm47"
    start_markers = (TOOL_CALL,)
    stray_markers = GLM_STRAY

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return (TOOL_CALL_END,)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return GlmScanner(ctx)

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # the common layout read directly; anything else: the scanner fed the region at once
        plain = _plain_call(text, pos, ctx)
        if plain is not None:
            return plain
        stop = text.find(TOOL_CALL_END, pos)
        found = _whole_call(text[pos : stop + len(TOOL_CALL_END)], ctx) if stop != -1 else None
        if found is not None:
            return [(None, *found)], stop + len(TOOL_CALL_END)
        return scanned_region(self, text, pos, start, ctx)


# --- whole-output batch grammar (parsers.batch) ---
# One call region ending at its first `</tool_call>`, read tag by tag with `str.find` instead of
# the scanner's buffer: the same steps as `GlmScanner._run` fed the region at once (name, layout
# before a key or the close, key, layout before the value, the value's sink chosen by its first
# visible character and schema, fed the whole value); None where the scanner would reject or
# abort, which the scanner itself then handles.
_LAYOUT_END = re.compile(r"(?:[ \t\r\n]|\\n)*")
_VALUE_START = re.compile(r"[ \t\r\n]*")
_VALUE_CLOSE = re.compile("|".join(re.escape(t) for t in (ARG_VALUE_END, TOOL_CALL_END)))


def _whole_call(region: str, ctx: CallContext) -> tuple[str, str] | None:
    """(name, arguments) of the call in `region` (the text after `<tool_call>` up to and
    including the first `</tool_call>`), or None."""
    m = _NAME_END.search(region)
    assert m is not None  # the region ends with `</tool_call>`
    name = _strip_name(region[: m.start()])
    if not name or "<" in name or "\n" in name or len(name) > _MAX_NAME:
        return None
    args = ArgsJson()
    out = [ArgsJson.open()]
    i = m.start()
    end = len(region) - len(TOOL_CALL_END)
    while True:
        i = _LAYOUT_END.match(region, i).end()  # type: ignore[union-attr]
        if i == end:
            out.append(ArgsJson.close())
            return name, "".join(out)
        if not region.startswith(ARG_KEY, i):
            return None
        k = region.find(ARG_KEY_END, i + len(ARG_KEY))
        if k == -1:
            return None
        key = region[i + len(ARG_KEY) : k].strip()
        if len(key) > _MAX_NAME:
            return None  # not a key: the scanner ends the call there, as when streamed
        i = _LAYOUT_END.match(region, k + len(ARG_KEY_END)).end()  # type: ignore[union-attr]
        if not region.startswith(ARG_VALUE, i):
            return None
        i += len(ARG_VALUE)
        close = _VALUE_CLOSE.search(region, i)
        assert close is not None
        pend = _PendingValue(args.key(key), ctx.param_schema(name, key))
        first = _VALUE_START.match(region, i).end()  # type: ignore[union-attr]
        sink = (
            StringValue(pend.prefix, trim=_TRIM)
            if first >= close.start()
            else pend.choose(region[first])
        )
        out.append(sink.feed(region[i : close.start()]))
        out.append(sink.end())
        i = close.end() if close.group() == ARG_VALUE_END else close.start()


# A call in the plainest shape, read by one regex at the region's start: a name without `<`,
# `<arg_key>` pairs each with its own `</arg_value>` (values free of `</arg_value>` and
# `</tool_call>`, keys of `<`), layout between them, then `</tool_call>`: what `_whole_call`
# reads, with the values its sinks write (`newlines` trimmed; the sink `_PendingValue`
# chooses), as one `dumps` of the dict (the encoder `ArgsJson` and the sinks use: equal bytes
# when no key repeats). Anything else: `_whole_call`.
_LAYOUT = r"(?:[ \t\r\n]|\\n)*"
_PLAIN_VALUE = r"[^<]*(?:<(?!/arg_value>|/tool_call>)[^<]*)*"
_PLAIN_PAIR = rf"<arg_key>([^<]*)</arg_key>{_LAYOUT}<arg_value>({_PLAIN_VALUE})</arg_value>"
_PLAIN_CALL = re.compile(
    rf"([^<]*)((?:<arg_key>[^<]*</arg_key>{_LAYOUT}<arg_value>{_PLAIN_VALUE}</arg_value>"
    rf"{_LAYOUT})*)</tool_call>"
)
_PLAIN_PAIRS = re.compile(_PLAIN_PAIR)


def _plain_call(text: str, pos: int, ctx: CallContext) -> BatchCall | None:
    m = _PLAIN_CALL.match(text, pos)
    if m is None:
        return None
    name = _strip_name(m.group(1))
    if not name or "\n" in name or len(name) > _MAX_NAME:
        return None
    pairs = _PLAIN_PAIRS.findall(m.group(2))
    declared = name in ctx.schemas
    args: dict[str, Any] = {}
    for raw_key, raw in pairs:
        key = raw_key.strip()
        if len(key) > _MAX_NAME:
            return None  # not a key: the runner ends the call there
        value = raw.strip("\r\n")
        first = raw.lstrip(" \t\r\n")[:1]
        if declared:
            args[key] = _plain_typed(value, first, ctx.param_schema(name, key))
        else:
            args[key] = _json_or_text(value) if first and first in '{["' else value
    if len(args) != len(pairs):
        return None  # a repeated key is written twice: `_whole_call` does
    return [(None, name, dumps(args))], m.end()


def _plain_typed(value: str, first: str, schema: Any) -> Any:
    """The value `_PendingValue.choose`'s sink writes (`first`: its first non-blank)."""
    t = primary_type(schema)
    if not first or is_string_type(t):
        return value
    if first in '{["':
        return _json_or_text(value)
    return value if t is None else _typed(value, schema)


TOOL_GRAMMARS: dict[str, AnyToolGrammar] = {"glm47": GlmGrammar()}
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {
    # reasoning-only deployments: a call start still ends reasoning (it is answer text)
    "glm45": ReasoningGrammar(
        "glm45", *FACTS.think_markers(), end_markers=(TOOL_CALL,), stray_markers=GLM_STRAY[3:]
    )
}
