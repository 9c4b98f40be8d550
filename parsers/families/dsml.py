"""DeepSeek DSML tool calls, shared by DeepSeek V4 (`deepseek_v4`) and V4.1 (`deepseek_v41`).

V4:   `<｜DSML｜tool_calls>` (`<｜DSML｜invoke name="F">` (`<｜DSML｜parameter name="K"
      string="true|false">V</｜DSML｜parameter>`)* `</｜DSML｜invoke>`)* `</｜DSML｜tool_calls>`
V4.1: the same with a space after the tag token and block name `calls`: `<｜DSML｜ calls>`,
      `<｜DSML｜ invoke name="F">`, ... `</｜DSML｜ calls>`.
The bars are U+FF5C. Inside a block the tags are read tolerantly (any blanks after the token,
either spelling of the token). `string="true"` values are raw text, trimmed, streamed;
`string="false"` values (and values without a `string` attribute) are JSON, a string when
they do not parse. A block whose close is missing at the end of output keeps its complete
invokes.

Model slips tolerated as vLLM's DeepSeek V4 parser does: a value is also ended by the next
`<｜DSML｜parameter ` tag, the invoke's close or the block's close (its `</｜DSML｜parameter>`
is missing); an invoke is also ended by the block's close; a lone `arguments` / `input`
parameter that the declared tool does not name, whose value is an object of declared
parameters, is unwrapped to that object. As SGLang's DSML detector does, an invoke whose body is
a JSON object instead of parameter tags takes that object as its arguments.

An invoke without its block start (`<｜DSML｜invoke name="F">…</｜DSML｜invoke>`, optionally
followed by the block close) is a call when F is a declared tool and the invoke closes, as
vLLM's V4 parser recovers it; it goes out whole at its close (it is not known to be a call
before), otherwise its text is content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from parsers.families.base import (
    BatchCall,
    CallArgs,
    CallContext,
    CallEnd,
    CallScanner,
    Event,
    ScanStep,
    ToolGrammar,
    scanned_region,
)
from parsers.families.xmlargs import (
    ArgsJson,
    CollectedValue,
    RawValue,
    StringValue,
    TagBuffer,
    ValueSink,
    begin_call,
    end_call,
)
from parsers.jsonstream import JsonValueReader, dumps
from parsers.scan import MarkerSet
from parsers.schema import loads_finite

BAR = "\uff5c"
TOKEN = f"{BAR}DSML{BAR}"
EOS = "<｜end▁of▁sentence｜>"  # the end-of-sentence token: markup when left in the output
_BLANKS = " \t\r\n"
_ATTR = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*"([^"]*)"')
_TAG = re.compile(rf"<(/?){re.escape(TOKEN)}\s*([A-Za-z_]+)\s*([^>]*)>")
_MAX_TAG = 512
_TAG_HEADS = ("<" + TOKEN, "</" + TOKEN)  # how a tag begins


def _json_or_text(text: str) -> Any:
    """JSON, else the text. Values JSON cannot carry (`1e999`, `NaN`, `Infinity`) keep the
    text as written, so the arguments stay valid JSON (as vLLM does)."""
    try:
        return loads_finite(text)
    except ValueError:
        return text


def _close_tags(name: str) -> tuple[str, ...]:
    return (f"</{TOKEN}{name}>", f"</{TOKEN} {name}>")


# What ends a value: its close, or (close missing) the next parameter, the invoke's close or
# the block's close. Only the first is consumed with the value.
_PARAM_CLOSE = frozenset(_close_tags("parameter"))
_VALUE_END = MarkerSet(
    (
        *_PARAM_CLOSE,
        *_close_tags("invoke"),
        *_close_tags("tool_calls"),
        *_close_tags("calls"),
        f"<{TOKEN}parameter ",
        f"<{TOKEN} parameter ",
    )
)
_WRAPPERS = ("arguments", "input")


class _Unwrap(CollectedValue):
    """A lone wrapper parameter (`arguments`/`input`) the tool does not declare: collected
    whole; its object is spliced in as the arguments when every key is declared."""

    __slots__ = ("_args", "_declared", "_key", "_string")

    def __init__(self, args: ArgsJson, key: str, declared: frozenset[str], string: bool) -> None:
        super().__init__()
        self._args = args
        self._key = key
        self._declared = declared
        self._string = string

    def end(self) -> str:
        text = self.collected().strip(_BLANKS)
        value: Any = text if self._string else _json_or_text(text)
        inner = _json_or_text(value) if isinstance(value, str) else value
        if isinstance(inner, dict) and set(inner) <= self._declared:
            return "".join(self._args.key(k) + dumps(v) for k, v in inner.items())
        return self._args.key(self._key) + dumps(value)


def value_sink(
    ctx: CallContext, tool: str, args: ArgsJson, key: str, string_attr: str | None
) -> ValueSink | _Unwrap:
    """The sink of a parameter value. `string="true"` is text; `"false"` (or no attribute,
    as vLLM reads it) is JSON, else text."""
    is_string = string_attr is not None and string_attr.lower() != "false"
    if ctx.is_string_param(tool, key):
        is_string = True  # the schema is the contract, whatever the attribute says
    if args.count == 0 and key in _WRAPPERS:
        params = ctx.schemas.get(tool)
        props = params.get("properties") if isinstance(params, Mapping) else None
        if isinstance(props, Mapping) and props and key not in props:
            return _Unwrap(args, key, frozenset(props), is_string)
    prefix = args.key(key)
    if is_string:
        return StringValue(prefix, trim="blanks")
    return RawValue(prefix, _json_or_text, trim="blanks")


class DsmlScanner(CallScanner):
    """Reads one DSML block, fed the text after its opening tag. `orphan`: the region is one
    invoke without its block start (`start` is the invoke tag's beginning); its events are
    held until the invoke closes, and it is rejected if it does not or its tool is unknown."""

    def __init__(self, start: str, block: str, ctx: CallContext, orphan: bool = False) -> None:
        self._start = start
        self._block = block
        self._ctx = ctx
        self._buf = TagBuffer()
        self._orphan = orphan
        self._held: list[Event] | None = [] if orphan else None  # orphan: not released yet
        # An orphan invoke is a call only if it closes; another invoke opener in a value before
        # that means it was cut: not a call, decided there (held to the end of output, a run
        # of such invokes was rescanned whole once per invoke: quadratic).
        self._value_end = MarkerSet((*_VALUE_END.markers, start)) if orphan else _VALUE_END
        if orphan:
            self._buf.add(start)  # the invoke tag is read from its beginning
        self._fed: list[str] = []
        self._call_raw: list[str] = []
        self._state = "block"  # block (between invokes), invoke (between params), value, json
        self._json: JsonValueReader | None = None  # an invoke whose body is a JSON object
        self._name = ""
        self._args = ArgsJson()
        self._sink: ValueSink | _Unwrap | None = None
        self._calls = 0  # invokes begun
        self._in_call = False

    def _take(self, n: int) -> str:
        out = self._buf.take(n)
        if self._in_call:
            self._call_raw.append(out)
        return out

    def stream(self, text: str) -> str | None:
        if self._held is not None:
            return None  # an orphan invoke: `feed` looks for another opener in each chunk
        sink = self._sink
        if (
            self._state == "value"
            and self._held is None
            and not self._buf.text
            and _VALUE_END.free(text)
        ):
            # streaming a value: no tag can start in this chunk (what `_run` does with it)
            assert sink is not None
            self._fed.append(text)
            self._call_raw.append(text)
            return sink.feed(text)
        held = self._buf.text
        if held and self._state == "value":
            tail = held + text
            if _VALUE_END.is_partial(tail) and _VALUE_END.search(tail) is None:
                # the value's end tag still arriving: `until` holds all of it back again
                # (and the value gets "", which changes nothing)
                self._fed.append(text)
                self._buf.add(text)
                return ""
            return None
        if held and ">" not in text and (self._state == "block" or self._state == "invoke"):
            # a tag still arriving: `_next_tag` goes on waiting for its `>` (and `_json_body`
            # does not take a buffer that starts with `<`)
            tag = held.lstrip(_BLANKS) + text
            if tag.startswith(_TAG_HEADS) and len(tag) <= _MAX_TAG and ">" not in tag:
                self._fed.append(text)
                self._buf.add(text)
                return ""
        return None

    def feed(self, text: str) -> ScanStep:
        out = self.stream(text)
        if out is not None:
            return ScanStep([CallArgs(out)] if out else [])
        self._fed.append(text)
        self._buf.add(text)
        return self._release(self._run(final=False))

    def finish(self) -> ScanStep:
        res = self._release(self._finish())
        if res.status == "more":  # an orphan invoke still held at the end of output
            return ScanStep([], "reject", "".join(self._fed))
        return res

    def _release(self, res: ScanStep) -> ScanStep:
        """Orphan invoke: hold its events until it closes; a region over before that is not
        a call."""
        held = self._held
        if held is None or res.status == "reject":
            return res
        held.extend(res.events)
        # (the new events only: looking through all held ones per feed was quadratic)
        if any(isinstance(e, CallEnd) and e.complete for e in res.events):
            self._held = None
            return ScanStep(held, res.status, res.rest)
        if res.status == "done":
            return ScanStep([], "reject", "".join(self._fed))
        return ScanStep([], "more")

    def _finish(self) -> ScanStep:
        res = self._run(final=True)
        if res.status != "more":
            return res
        events = res.events
        if self._calls == 0:
            return ScanStep([], "reject", "".join(self._fed))
        if self._in_call:
            self._force_close(events)
        return ScanStep(events, "done", self._buf.rest())

    def _force_close(self, events: list[Event]) -> None:
        if self._json is not None:
            # The reader wrote the object's `}` when done; else close what it wrote.
            events.append(CallEnd(False, "".join(self._call_raw)))  # never repaired
            self._json = None
            self._in_call = False
            return
        sink = self._sink
        if sink is not None:
            self._call_raw.append(self._buf.text)
            sink.feed(self._buf.rest())
            self._sink = None
        end_call(events, sink, complete=False, raw="".join(self._call_raw))
        self._in_call = False

    def _end_invoke(self, events: list[Event]) -> None:
        if self._json is None:  # a JSON body wrote its own `}`
            events.append(CallArgs(ArgsJson.close()))
        self._json = None
        events.append(CallEnd())
        self._in_call = False

    def _json_body(self) -> bool:
        """At the start of an invoke's body: a JSON object instead of parameter tags? Then read
        it (its `{` is the one already written with the call's begin)."""
        if self._args.count or self._json is not None:
            return False
        text = self._buf.text
        body = text.lstrip(_BLANKS)
        if not body.startswith("{"):
            return False
        self._take(len(text) - len(body) + 1)
        reader = JsonValueReader()
        reader.feed("{")
        self._json = reader
        self._state = "json"
        return True

    def _next_tag(self) -> tuple[int, re.Match[str] | None] | None:
        """After blanks: (blanks, tag match), (blanks, None) for text that is no DSML tag,
        or None when more text is needed."""
        text = self._buf.text
        blanks = len(text) - len(text.lstrip(_BLANKS)) if text[:1] in _BLANKS else 0
        # a window, not the rest of the buffer: a tag is at most _MAX_TAG long, and copying or
        # matching the whole rest per tag made a run of unclosed tags quadratic
        stripped = text[blanks : blanks + _MAX_TAG + 1]
        if not stripped:
            return None
        m = _TAG.match(stripped)
        if m is not None:
            return blanks, m
        for head in ("<" + TOKEN, "</" + TOKEN):
            cut = stripped[: len(head)]
            if head.startswith(cut) and ">" not in stripped and len(stripped) <= _MAX_TAG:
                return None  # a tag still arriving
        return blanks, None

    def _run(self, final: bool) -> ScanStep:
        events: list[Event] = []
        while True:
            st = self._state
            if st == "json":
                reader = self._json
                assert reader is not None
                out, pos = reader.feed(self._buf.text)
                self._take(pos)
                if out:
                    events.append(CallArgs(out))
                if reader.error is not None:  # the text from the error on is content
                    return self._malformed(events)
                if not reader.done:
                    return ScanStep(events)
                self._state = "invoke"
                continue
            if st == "value":
                sink = self._sink
                assert sink is not None
                before, tag = self._buf.until(self._value_end, final)
                if tag == self._start and self._orphan:
                    return ScanStep([], "reject", "".join(self._fed))
                self._call_raw.append(before)
                out = sink.feed(before)
                if out:
                    events.append(CallArgs(out))
                if tag is None:
                    return ScanStep(events)
                if tag in _PARAM_CLOSE:
                    self._take(len(tag))
                # else: the close is missing; the tag is read next in the invoke state
                events.append(CallArgs(sink.end()))
                self._sink = None
                self._state = "invoke"
                continue
            if st == "invoke" and self._json_body():
                continue
            got = self._next_tag()
            if got is None:
                return ScanStep(events)
            blanks, m = got
            if m is None:
                return self._malformed(events)
            closing, name, attrs = m.group(1) == "/", m.group(2), dict(_ATTR.findall(m.group(3)))
            if st == "block":
                if self._orphan and self._calls and not (closing and name == self._block):
                    return ScanStep(events, "done", self._buf.rest())  # one invoke only
                if self._orphan and not self._calls and attrs.get("name") not in self._ctx.schemas:
                    return ScanStep([], "reject", "".join(self._fed))  # not a declared tool
                if not closing and name == "invoke" and attrs.get("name"):
                    self._buf.take(blanks)
                    self._in_call = True
                    self._call_raw = []
                    self._take(m.end())
                    self._name = attrs["name"]
                    self._args = ArgsJson()
                    self._calls += 1
                    begin_call(events, self._name)
                    self._state = "invoke"
                elif closing and name == self._block:
                    if self._calls == 0:
                        return ScanStep([], "reject", "".join(self._fed))
                    self._buf.take(blanks + m.end())
                    return ScanStep(events, "done", self._buf.rest())
                else:
                    return self._malformed(events)
            else:  # invoke: parameters or the invoke's close
                if self._json is not None and not (closing and name in ("invoke", self._block)):
                    return self._malformed(events)  # only the close may follow a JSON body
                if not closing and name == "parameter" and "name" in attrs:
                    self._take(blanks + m.end())
                    self._sink = self._value_sink(attrs["name"], attrs.get("string"))
                    self._state = "value"
                elif closing and name == "invoke":
                    self._take(blanks + m.end())
                    self._end_invoke(events)
                    self._state = "block"
                elif closing and name == self._block:
                    # `</｜DSML｜invoke>` missing: the block's close ends the invoke too.
                    self._take(blanks)
                    self._end_invoke(events)
                    self._in_call = False
                    self._buf.take(m.end())
                    return ScanStep(events, "done", self._buf.rest())
                else:
                    return self._malformed(events)

    def _value_sink(self, key: str, string_attr: str | None) -> ValueSink | _Unwrap:
        return value_sink(self._ctx, self._name, self._args, key, string_attr)

    def _malformed(self, events: list[Event]) -> ScanStep:
        if self._calls == 0 and not events:
            return ScanStep([], "reject", "".join(self._fed))
        if self._in_call:
            self._force_close(events)
        return ScanStep(events, "done", self._buf.rest())


class DsmlGrammar(ToolGrammar):
    """`blocks`: accepted block names (V4 `tool_calls`, V4.1 `calls`)."""

    def __init__(self, name: str, *, spaced: bool, blocks: tuple[str, ...]) -> None:
        self.name = name
        sep = " " if spaced else ""
        self._blocks = {f"<{TOKEN}{sep}{b}>": b for b in blocks}
        self._ends = {f"<{TOKEN}{sep}{b}>": (f"</{TOKEN}{sep}{b}>",) for b in blocks}
        # An invoke without its block start (recovered when its tool is declared).
        self._orphan = f'<{TOKEN}{sep}invoke name="'
        self._ends[self._orphan] = self._ends[f"<{TOKEN}{sep}{blocks[0]}>"]
        self.start_markers = (*self._blocks, self._orphan)
        closes = (f"</{TOKEN}{sep}{b}>" for b in ("invoke", "parameter", *blocks))
        self.stray_markers = (*closes, EOS)
        self.pairing_openers = (f"<{TOKEN}{sep}invoke", f"<{TOKEN}{sep}parameter")

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        return self._ends[start]

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        if start == self._orphan:
            return DsmlScanner(start, next(iter(self._blocks.values())), ctx, orphan=True)
        return DsmlScanner(start, self._blocks[start], ctx)

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # a block in the common shape read directly; anything else: the scanner at once
        block = self._blocks.get(start)
        found = _whole_block(text, pos, block, ctx) if block is not None else None
        return found if found is not None else scanned_region(self, text, pos, start, ctx)


# --- whole-output batch grammar (parsers.batch) ---
# A block (after its opening tag) in the common shape, read tag by tag: invokes with a name,
# each of `parameter` tags with a name and their values up to their own close, then the
# invoke's close; then the block's close. Tags are matched as `DsmlScanner._next_tag` matches
# them (same regex, same window), values written by the same sinks. Anything else (a JSON
# body, a wrapper parameter, a missing close, text between tags, a cut block) is the scanner's.


def _whole_block(text: str, pos: int, block: str, ctx: CallContext) -> BatchCall | None:
    calls: list[tuple[str | None, str, str]] = []
    i = pos
    while True:  # between invokes
        if calls:
            close = _PLAIN_CLOSE.match(text, i)
            if close is not None and close.group(1) == block:
                return calls, close.end()
        plain = _plain_invoke(text, i, ctx)
        if plain is not None:
            calls.append(plain[0])
            i = plain[1]
            continue
        m = _whole_tag(text, i)
        if m is None:
            return None
        closing, name, attrs = m.group(1) == "/", m.group(2), dict(_ATTR.findall(m.group(3)))
        i = m.end()
        if closing and name == block:
            return (calls, i) if calls else None
        tool = attrs.get("name")
        if closing or name != "invoke" or not tool:
            return None
        args = ArgsJson()
        out = [ArgsJson.open()]
        while True:  # between parameters
            j = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]
            if args.count == 0 and text.startswith("{", j):
                return None  # a JSON body
            m = _TAG.match(text, j, j + _MAX_TAG + 1)
            if m is None:
                return None
            closing, name, attrs = m.group(1) == "/", m.group(2), dict(_ATTR.findall(m.group(3)))
            i = m.end()
            if closing and name == "invoke":
                break
            key = attrs.get("name")
            if closing or name != "parameter" or key is None:
                return None
            if args.count == 0 and key in _WRAPPERS:
                return None  # maybe unwrapped: the scanner decides
            end = _VALUE_END.search(text, i)
            if end is None or end.group() not in _PARAM_CLOSE:
                return None
            sink = value_sink(ctx, tool, args, key, attrs.get("string"))
            out.append(sink.feed(text[i : end.start()]))
            out.append(sink.end())
            i = end.end()
        out.append(ArgsJson.close())
        calls.append((None, tool, "".join(out)))


_BLANK_RUN = re.compile(r"[ \t\r\n]*")


def _whole_tag(text: str, i: int) -> re.Match[str] | None:
    """The DSML tag after the blanks at `i`, within `_next_tag`'s window."""
    j = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]
    return _TAG.match(text, j, j + _MAX_TAG + 1)


# An invoke in the plainest shape, read by one regex: `name` and (optionally) `string`
# attributes exactly so, each value free of DSML tag heads (so its own close is the first
# `_VALUE_END`) and ended by its close, tags no longer than `_next_tag`'s window. The same
# values as the tag-by-tag reader with its sinks (trimmed blanks; string text, else
# `_json_or_text`), written by one `dumps` of the dict (the same encoder as `ArgsJson` and
# the sinks: equal bytes when no key repeats). Anything else: the tag-by-tag reader.
_T = re.escape(TOKEN)
_PLAIN_VALUE = rf"[^<]*(?:<(?!/?{_T})[^<]*)*"
_PLAIN_PARAM = (
    rf'<{_T} ?parameter name="([^">]{{1,256}})"(?: string="(true|false)")?>'
    rf"({_PLAIN_VALUE})</{_T} ?parameter>"
)
_PLAIN_INVOKE = re.compile(
    rf'[ \t\r\n]*<{_T} ?invoke name="([^">]{{1,256}})">'
    rf"((?:[ \t\r\n]*{_PLAIN_PARAM})*)[ \t\r\n]*</{_T} ?invoke>"
)
_PLAIN_PARAMS = re.compile(_PLAIN_PARAM)
_PLAIN_CLOSE = re.compile(
    rf"[ \t\r\n]*</{_T} ?([A-Za-z_]+)>"
)  # a block's close, as `_TAG` reads it


def _plain_invoke(
    text: str, i: int, ctx: CallContext
) -> tuple[tuple[str | None, str, str], int] | None:
    m = _PLAIN_INVOKE.match(text, i)
    if m is None:
        return None
    tool = m.group(1)
    params = _PLAIN_PARAMS.findall(m.group(2))
    if params and params[0][0] in _WRAPPERS:
        return None  # maybe unwrapped: the tag-by-tag reader's sinks decide
    declared = tool in ctx.schemas
    args: dict[str, Any] = {}
    for key, string, raw in params:
        value = raw.strip(_BLANKS)
        if string == "true" or (declared and ctx.is_string_param(tool, key)):
            args[key] = value
        else:
            args[key] = _json_or_text(value)
    if len(args) != len(params):
        return None  # a repeated key is written twice: the tag-by-tag reader does
    return (None, tool, dumps(args)), m.end()
