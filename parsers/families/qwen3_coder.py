"""Qwen3-Coder XML-style calls (`qwen3_coder`).

`<tool_call>` `<function=NAME>` (`<parameter=KEY>` VALUE `</parameter>`)* `</function>`
`</tool_call>`; a bare `<function=NAME>` block is a call too. Values: one surrounding newline
trimmed (no entity decoding), typed by the tool's JSON schema (`parsers.schema`); a value
that is `null` is null whatever the type; undeclared parameters and tools stay strings.
A missing `</parameter>` ends the value at the next `<parameter=`, `</function>` or
`</tool_call>`. Several `<function=` blocks may share one `<tool_call>` wrapper. A Hermes-style
JSON object inside `<tool_call>` (the model mixing formats) is read as a Hermes call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from parsers.atomic import atomic
from parsers.families.base import (
    BatchCall,
    CallArgs,
    CallContext,
    CallScanner,
    Event,
    ScanStep,
    ToolGrammar,
    scanned_region,
)
from parsers.families.hermes import HermesScanner
from parsers.families.xmlargs import (
    ArgsJson,
    RawValue,
    StringValue,
    TagBuffer,
    ValueSink,
    begin_call,
    end_call,
)
from parsers.jsonstream import dumps
from parsers.scan import MarkerSet
from parsers.schema import convert_by_type, convert_value, primary_type, schema_types

TOOL_CALL = "<tool_call>"
TOOL_CALL_END = "</tool_call>"
FUNCTION = "<function="
FUNCTION_END = "</function>"
PARAMETER = "<parameter="
PARAMETER_END = "</parameter>"

_OPEN_TAGS = MarkerSet((FUNCTION,))
_BODY_TAGS = MarkerSet((PARAMETER, FUNCTION_END, TOOL_CALL_END))
_DRIFTED_END = "</parameter"  # a close the grammar let drift: `</parameter1>`, `</parameter`
_VALUE_MARKS = MarkerSet((PARAMETER, PARAMETER_END, _DRIFTED_END, FUNCTION_END, TOOL_CALL_END))
# a drifted close right before an implicit value end is markup (as SGLang strips it)
_DRIFTED_TAIL = re.compile(r"</parameter[^<>\n]*>?[ \t\r\n]*\Z")
_CLOSE_FOLLOW = MarkerSet((PARAMETER, FUNCTION_END, TOOL_CALL_END))
_FEND_FOLLOW = MarkerSet((TOOL_CALL_END,))
_STOP_FOLLOW = MarkerSet((TOOL_CALL,))
_BLANKS = " \t\r\n"
_AFTER_TAGS = MarkerSet((TOOL_CALL_END, FUNCTION))
_BARE_AFTER_TAGS = MarkerSet((TOOL_CALL_END,))
_MAX_NAME = 256
# a function name never holds blanks, tags or template braces: `<function={{ tc.name }}>`
# (an unrendered Jinja template in prose) is text, not a call
_NOT_IN_NAME = frozenset("<>{} \t\r\n")


_BOOLEAN_TYPES = frozenset({"boolean", "bool", "binary"})
_KNOWN_TYPES = frozenset(
    {"integer", "int", "number", "float", "double", "object", "array", "dict", "list", "null"}
    | _BOOLEAN_TYPES
)


def _is_number_type(t: str) -> bool:
    return t in ("number", "float", "double") or t.startswith(("num", "float", "double"))


def _known_type(t: str) -> bool:
    return t in _KNOWN_TYPES or t.startswith(
        ("int", "uint", "long", "short", "unsigned", "num", "float", "double", "dict", "list")
    )


def _convert(ctx: CallContext, tool: str, key: str) -> tuple[bool, str, Any]:
    """(is_string, null words, converter) for a parameter by the declared schema.

    Null words of a string value: `null` becomes JSON null for undeclared parameters; a
    nullable string also takes `None`; a declared plain string keeps both (as vLLM does).
    """
    schema = ctx.param_schema(tool, key)
    if schema is None:
        return True, "null", None
    t = primary_type(schema)
    types = schema_types(schema)
    if t is None:
        return True, "null", None
    if t in ("string", "str", "text", "varchar", "char", "enum"):
        return True, "null_none" if "null" in types else "", None

    def conv(text: str) -> Any:
        # `None` is how Qwen3.5 templates render a null argument (`value | string`)
        if text.lower() == "null" or text == "None":
            return None
        if t in _BOOLEAN_TYPES:
            # anything but `true` is false, as vLLM and Dynamo convert booleans
            return text.strip().lower() == "true"
        if not _known_type(t):
            # a custom type name: JSON, else a Python literal, else the text (vLLM, Dynamo)
            return convert_by_type(text, "object")
        value = convert_value(text, schema)
        if isinstance(value, float) and value.is_integer() and _is_number_type(t):
            return int(value)  # `42.0` -> 42, as vLLM and Dynamo write whole numbers
        return _double_decoded(value, t)

    return False, "", conv


def _double_decoded(value: Any, t: str) -> Any:
    """An object/array value the model wrote as a JSON string of its repr
    (`"{'key': 'value'}"`, from templates that ran `json.dumps(str(dict))`) is decoded again."""
    if isinstance(value, str) and t in ("object", "array", "dict", "list"):
        again = convert_by_type(value, t)
        if isinstance(again, (dict, list)):
            return again
    return value


def _param_names(ctx: CallContext, tool: str) -> frozenset[str] | None:
    """The declared parameter names of `tool`, None when it has no declared properties."""
    params = ctx.schemas.get(tool)
    props = params.get("properties") if isinstance(params, Mapping) else None
    return frozenset(props) if isinstance(props, Mapping) and props else None


def _follow(text: str, at: int, final: bool, tags: MarkerSet) -> str | bool | None:
    """The tag among `tags` after the blanks at `at`: the tag, True (end of output), False
    (other text), None (cannot tell yet)."""
    j = at
    while j < len(text) and text[j] in _BLANKS:
        j += 1
    if j == len(text):
        return True if final else None
    tag = tags.starts_at(text, j)
    return False if final and tag is None else tag


_PROBE_LEVELS = 3
_HELD_BATCH = 4096  # held value text past which new text waits in doubling batches (`add`)


def _close_ends(
    text: str, at: int, names: frozenset[str] | None, final: bool, level: int
) -> bool | None:
    """Whether the `</parameter>` ending at `at` is structural (None: cannot tell yet).

    Followed by `<parameter=NAME>`: structural for a declared NAME (any NAME without a
    schema); for an undeclared NAME only when that parameter's own first `</parameter>` is
    structural too - so an extra parameter the schema does not name still parses, while a
    value holding `</parameter>\n<parameter=x>` lines of literal text stays whole.
    """
    tag = _follow(text, at, final, _CLOSE_FOLLOW)
    if tag != PARAMETER:
        return None if tag is None else tag is not False
    start = text.index(PARAMETER, at) + len(PARAMETER)
    # a `>` past the name bound does not make a tag: the same answer whether it has come yet
    # or not (a stream stops waiting at the bound)
    end = text.find(">", start, start + _MAX_NAME + 1)
    if end < 0:
        return None if not final and len(text) - start <= _MAX_NAME else False
    if names is None or text[start:end].strip() in names:
        return True
    if level >= _PROBE_LEVELS:
        return False
    return _first_close_ends(text, end + 1, names, final, level + 1)


def _first_close_ends(
    text: str, start: int, names: frozenset[str] | None, final: bool, level: int
) -> bool | None:
    """Whether the first depth-0 `</parameter>` of the value starting at `start` is
    structural (False when the call's end comes first)."""
    depth = 0
    pos = start
    while True:
        m = _VALUE_MARKS.search(text, pos)
        if m is None:
            return False if final else None
        i, tag = m.start(), m.group()
        after = i + len(tag)
        if tag == PARAMETER:
            if i == start or text[i - 1] == "\n":
                depth += 1
        elif tag == PARAMETER_END and depth:
            depth -= 1
        elif tag == PARAMETER_END:
            return _close_ends(text, after, names, final, level)
        elif tag == TOOL_CALL_END:
            stop = _follow(text, after, final, _STOP_FOLLOW)
            if stop is None:
                return None
            if stop is not False:
                return False
        pos = after


class _ValueEnd:
    """Where a parameter value really ends (the structural rules of vLLM's Qwen3-Coder parser),
    so values that hold tag-like text (a file with `</parameter>` or a whole literal
    `<tool_call>` in it) stay whole:

    * a `<parameter=` at a line start inside the value opens a nested literal (depth + 1); a
      `</parameter>` closes one;
    * a `</parameter>` at depth 0 ends the value when a structural tag follows it (after blanks):
      `<parameter=NAME>` with NAME declared (any NAME without a schema), `</function>`,
      `</tool_call>`, or the end of output; otherwise it is text;
    * `</tool_call>` followed by `<tool_call>` or the end of output bounds the search; with no
      end found by then (a missing `</parameter>`) the value ends at the first line-start
      `<parameter=NAME>` with a declared, not yet given NAME, else at a `</function>` followed by
      `</tool_call>`, else at the bound.

    Text is released to the value as soon as no candidate before it is unresolved, so ordinary
    values stream as before; only text after a tag-like candidate waits for its resolution.
    """

    __slots__ = ("depth", "hold", "key", "more", "more_len", "names", "pos", "prev", "seen", "text")

    def __init__(self, key: str, names: frozenset[str] | None, seen: set[str]) -> None:
        self.key = key
        self.names = names
        self.seen = seen
        self.text = ""  # value text not yet released
        self.pos = 0  # scan position in `text`
        self.depth = 0
        self.hold: int | None = None  # first unresolved candidate (nothing from it is released)
        self.prev = "\n"  # the character before `text` (the value start counts as a line start)
        # Text after `text` not yet scanned, while a long held value waits (see `add`)
        self.more: list[str] = []
        self.more_len = 0

    def add(self, text: str, final: bool) -> bool:
        """Append `text`; False while it waits unscanned. Nothing is released while a
        candidate is unresolved, and appending to a long held text copied all of it per
        chunk (a looping model's unclosed nested `<parameter=` lines: quadratic). Past
        `_HELD_BATCH` characters new text waits until it is as long as the held text, so
        copies double; the scan then decides exactly as it would have piece by piece
        (chunk invariance), only later."""
        if not final and self.hold is not None and len(self.text) >= _HELD_BATCH:
            self.more.append(text)
            self.more_len += len(text)
            if self.more_len < len(self.text):
                return False
            text = ""
        if self.more:
            text = "".join(self.more) + text
            self.more = []
            self.more_len = 0
        self.text += text
        return True

    def _release(self, upto: int) -> int:
        return upto if self.hold is None else min(upto, self.hold)

    def drop(self, n: int) -> str:
        """Take the first `n` characters (released to the value)."""
        out, self.text = self.text[:n], self.text[n:]
        if out:
            self.prev = out[-1]
            self.pos -= n
            if self.hold is not None:
                self.hold -= n
        return out

    def _after_close(self, text: str, at: int, final: bool) -> bool | None:
        return _close_ends(text, at, self.names, final, 0)

    def scan(self, final: bool) -> tuple[int, int | None, int]:
        """(release, end, resume): release `text[:release]` now; when `end` is set the value is
        `text[:end]` and parsing resumes at `text[resume:]`."""
        t = self.text
        while True:
            m = _VALUE_MARKS.search(t, self.pos)
            if m is None:
                if final:
                    return self._fallback(len(t), cut=True)
                # nothing before the holdback can start a mark: the next scan starts there
                # (rescanning held text from the last mark with each chunk was quadratic)
                self.pos = _VALUE_MARKS.holdback(t, self.pos)
                return self._release(self.pos), None, 0
            i, tag = m.start(), m.group()
            after = i + len(tag)
            if tag == PARAMETER:
                if (t[i - 1] if i else self.prev) == "\n":
                    self.depth += 1
                    if self.hold is None:
                        self.hold = i
                self.pos = after
            elif tag == _DRIFTED_END:
                if after == len(t) and not final:
                    return self._release(i), None, 0  # may still be `</parameter>`
                if not self.depth and self.hold is None:
                    self.hold = i  # stripped if the value ends right after it
                self.pos = after
            elif tag == PARAMETER_END and self.depth:
                self.depth -= 1
                self.pos = after
            elif tag == PARAMETER_END:
                ends = self._after_close(t, after, final)
                if ends is None:
                    return self._release(i), None, 0
                if ends:
                    return self._release(i), i, after
                self.pos = after
            elif tag == FUNCTION_END:
                fend = _follow(t, after, final, _FEND_FOLLOW)
                if fend is None:
                    return self._release(i), None, 0
                if fend is not False and self.hold is None:
                    self.hold = i  # may end a value that lost its `</parameter>`
                self.pos = after
            else:  # `</tool_call>`
                stop = _follow(t, after, final, _STOP_FOLLOW)
                if stop is None:
                    return self._release(i), None, 0
                if stop is not False:
                    return self._fallback(i)
                self.pos = after

    def _fallback(self, bound: int, cut: bool = False) -> tuple[int, int | None, int]:
        """No `</parameter>` ends the value before `bound`: cut at the first line-start
        `<parameter=NAME>` for a declared, not yet given NAME, else at a `</function>` that
        closes the call, else at `bound`; with `cut` (`bound` is the end of output) the value
        was cut off instead: nothing more is released, the call is never repaired."""
        t = self.text
        i = t.find(PARAMETER)
        while 0 <= i < bound:
            if (t[i - 1] if i else self.prev) == "\n":
                end = t.find(">", i, bound)  # (to `bound` only: per tag, never the rest)
                name = t[i + len(PARAMETER) : end].strip() if end >= 0 else None
                if (
                    name
                    and name != self.key
                    and name not in self.seen
                    and (self.names is None or name in self.names)
                ):
                    return self._cut(i)
            i = t.find(PARAMETER, i + 1)
        i = t.find(FUNCTION_END)
        while 0 <= i < bound:
            # blanks, then `</tool_call>` or `bound` (slicing the rest per tag was quadratic)
            j = i + len(FUNCTION_END)
            if j < bound:
                j = _BLANK_RUN.match(t, j, bound).end()  # type: ignore[union-attr]
            if j >= bound or t.startswith(TOOL_CALL_END, j, bound):
                return self._cut(i)
            i = t.find(FUNCTION_END, i + 1)
        if cut:
            return 0, None, 0
        return bound, bound, bound

    def _cut(self, at: int) -> tuple[int, int, int]:
        """The value ends before `at` (minus a drifted close right before it)."""
        m = _DRIFTED_TAIL.search(self.text, 0, at)
        end = m.start() if m else at
        return end, end, at


class Qwen3CoderScanner(CallScanner):
    def __init__(self, start: str, ctx: CallContext) -> None:
        self._ctx = ctx
        self._start = start
        self._wrapped = start == TOOL_CALL
        self._state = "open" if self._wrapped else "name"
        self._buf = TagBuffer()
        self._fed: list[str] = []
        self._name = ""
        self._args = ArgsJson()
        self._sink: ValueSink | None = None
        self._committed = False
        self._hermes: HermesScanner | None = None
        self._value: _ValueEnd | None = None
        self._seen: set[str] = set()  # parameter names given so far in this call

    def _raw(self) -> str:
        return self._start + "".join(self._fed)

    def _reject(self) -> ScanStep:
        return ScanStep([], "reject", "".join(self._fed))

    def _close(self, events: list[Event], complete: bool) -> None:
        end_call(events, self._sink, complete=complete, raw="" if complete else self._raw())
        self._sink = None
        self._state = "after"

    def stream(self, text: str) -> str | None:
        value = self._value
        if (
            self._state == "value"
            and value is not None
            and not value.text
            and value.hold is None
            and not self._buf.text
            and text
            and "<" not in text  # no tag can start in this chunk: `_run` releases all of it
        ):
            sink = self._sink
            assert sink is not None
            self._fed.append(text)
            value.prev = text[-1]  # what `value.drop` does with it
            value.pos -= len(text)
            return sink.feed(text)
        if (
            self._state == "value"
            and value is not None
            and value.text
            and value.pos <= 0
            and value.hold is None
            and not self._buf.text
        ):
            # a tag the value holds back, still only a prefix with this chunk: `scan` holds
            # it all back again (and the value gets "", which changes nothing)
            tail = value.text + text
            if _VALUE_MARKS.is_partial(tail) and _VALUE_MARKS.search(tail) is None:
                self._fed.append(text)
                value.text = tail
                return ""
        return None

    def feed(self, text: str) -> ScanStep:
        self._fed.append(text)
        if self._hermes is not None:
            return self._delegated(self._hermes.feed(text))
        self._buf.add(text)
        return self._run(final=False)

    def finish(self) -> ScanStep:
        if self._hermes is not None:
            return self._delegated(self._hermes.finish())
        res = self._run(final=True)
        if res.status != "more":
            return res
        events = res.events
        if not self._committed:
            return self._reject()
        if self._state in ("after", "bare_after"):
            return ScanStep(events, "done", self._buf.rest())
        self._close(events, complete=False)
        return ScanStep(events, "done")

    def _delegated(self, res: ScanStep) -> ScanStep:
        return self._reject() if res.status == "reject" else res

    def _run(self, final: bool) -> ScanStep:
        events: list[Event] = []
        buf = self._buf
        while True:
            st = self._state
            if st == "open":
                if not buf.skip_blanks():
                    return ScanStep(events)
                if buf.text[0] == "{":
                    self._hermes = HermesScanner()
                    return self._delegated(self._hermes.feed(buf.rest()))
                tag = buf.starts(_OPEN_TAGS)
                if tag is None:
                    return ScanStep(events)
                if tag is False:
                    return self._reject()
                buf.take(len(tag))
                self._state = "name"
            elif st == "name":
                end = buf.text.find(">")
                if end < 0:
                    # not a name once what arrived cannot become one (the same test as
                    # below, so a split inside the tag decides as the whole text does)
                    if len(buf.text) > _MAX_NAME or any(
                        c in _NOT_IN_NAME for c in buf.text.strip()
                    ):
                        if not self._committed:
                            return self._reject()
                        return ScanStep(events, "done", buf.rest())
                    return ScanStep(events)
                name = buf.text[:end].strip()
                # (the length test as while waiting above, so no split changes the result)
                if not name or end > _MAX_NAME or any(c in _NOT_IN_NAME for c in name):
                    if not self._committed:
                        return self._reject()
                    return ScanStep(events, "done", buf.rest())
                buf.take(end + 1)
                self._name = name
                self._args = ArgsJson()
                begin_call(events, name)
                self._committed = True
                self._state = "body"
            elif st == "body":
                blanks, tag = buf.starts_after_blanks(_BODY_TAGS)
                if tag is None:
                    return ScanStep(events)
                if tag is False:
                    # text where a tag belongs: the call ends here, the text is content
                    self._close(events, complete=False)
                    return ScanStep(events, "done", buf.rest())
                buf.take(blanks + len(tag))
                if tag == PARAMETER:
                    self._state = "key"
                else:
                    self._close(events, complete=True)
                    if tag == TOOL_CALL_END:
                        return ScanStep(events, "done", buf.rest())
                    if not self._wrapped:
                        # a bare block the model still closed with `</tool_call>` (it
                        # dropped only the opener): the closer is markup, not content
                        self._state = "bare_after"
            elif st == "bare_after":
                blanks, tag = buf.starts_after_blanks(_BARE_AFTER_TAGS)
                if tag is None:
                    return ScanStep(events)
                if tag is not False:
                    buf.take(blanks + len(tag))
                return ScanStep(events, "done", buf.rest())
            elif st == "key":
                end = buf.text.find(">")
                if end < 0 or end > _MAX_NAME:
                    if end > _MAX_NAME or len(buf.text) > _MAX_NAME:
                        self._close(events, complete=False)
                        return ScanStep(events, "done", buf.rest())
                    return ScanStep(events)
                key = buf.take(end + 1)[:-1].strip()
                prefix = self._args.key(key)
                is_string, nulls, conv = _convert(self._ctx, self._name, key)
                if is_string:
                    self._sink = StringValue(
                        prefix,
                        trim="one_newline",
                        null_word=bool(nulls),
                        none_word=nulls == "null_none",
                    )
                else:
                    self._sink = RawValue(prefix, conv, trim="one_newline")
                self._value = _ValueEnd(key, _param_names(self._ctx, self._name), set(self._seen))
                self._seen.add(key)
                self._state = "value"
            elif st == "value":
                sink, value = self._sink, self._value
                assert sink is not None and value is not None
                if not value.add(buf.rest(), final):
                    return ScanStep(events)
                release, vend, resume = value.scan(final)
                out = sink.feed(value.drop(release))
                if out:
                    events.append(CallArgs(out))
                if vend is None:
                    return ScanStep(events)
                out = sink.feed(value.drop(vend - release))
                if out:
                    events.append(CallArgs(out))
                events.append(CallArgs(sink.end()))
                buf.add(value.text[resume - vend :])
                self._sink = self._value = None
                self._state = "body"
            else:  # after </function> inside <tool_call>: </tool_call> or another function
                blanks, tag = buf.starts_after_blanks(_AFTER_TAGS)
                if tag is None:
                    return ScanStep(events)
                if tag is False:
                    return ScanStep(events, "done", buf.rest())
                buf.take(blanks + len(tag))
                if tag == TOOL_CALL_END:
                    return ScanStep(events, "done", buf.rest())
                self._state = "name"


class Qwen3CoderGrammar(ToolGrammar):
    name = "qwen3_coder"
    start_markers = (TOOL_CALL, FUNCTION)
    stray_markers = (TOOL_CALL_END, "<|im_end|>")

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        # a bare block may still end with a stray `</tool_call>` that belongs to it; the
        # scanner stops at the first text after `</function>` (the rest is prose again)
        return (TOOL_CALL_END,)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return Qwen3CoderScanner(start, ctx)

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        # the common shape read directly; anything else: the scanner fed the region at once
        found = _whole_region(text, pos, ctx) if start == TOOL_CALL else None
        return found if found is not None else scanned_region(self, text, pos, start, ctx)


# --- whole-output batch grammar (parsers.batch) ---
# A `<tool_call>` region in the common shape, read tag by tag with `str.find`: `<function=NAME>`
# blocks of `<parameter=KEY>` values, each ending at its first tag when that is a
# `</parameter>` that `_close_ends` finds structural (the whole output is known, so it decides
# now what the scanner decides once the text after it arrives), values written by the same
# sinks; then `</tool_call>` (or text after `</function>`, which the scanner leaves as
# content). Anything else (a Hermes object, tags inside a value, a missing or drifted close,
# a cut call) is the scanner's.
_BLANK_RUN = re.compile(r"[ \t\r\n]*")


def _whole_region(text: str, pos: int, ctx: CallContext) -> BatchCall | None:
    calls: list[tuple[str | None, str, str]] = []
    i = _BLANK_RUN.match(text, pos).end()  # type: ignore[union-attr]
    if not text.startswith(FUNCTION, i):
        return None
    while True:  # at `<function=`
        found = _plain_function(text, i, ctx) or _tagged_function(text, i, ctx)
        if found is None:
            return None
        call, i, tag = found
        calls.append(call)
        if tag == TOOL_CALL_END:
            return calls, i
        j = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]
        if text.startswith(TOOL_CALL_END, j):
            return calls, j + len(TOOL_CALL_END)
        if not text.startswith(FUNCTION, j):
            return calls, i  # text after `</function>`: content (blanks at the end: layout)
        i = j


def _tagged_function(
    text: str, i: int, ctx: CallContext
) -> tuple[tuple[str | None, str, str], int, str] | None:
    """The `<function=` block at `i` read tag by tag: its call, the offset after the tag
    that ended it and that tag (`</function>` or `</tool_call>`)."""
    i += len(FUNCTION)
    end = text.find(">", i)
    if end < 0:
        return None
    name = text[i:end].strip()
    if not name or end - i > _MAX_NAME or any(c in _NOT_IN_NAME for c in name):
        return None
    names = _param_names(ctx, name)
    args = ArgsJson()
    out = [ArgsJson.open()]
    i = end + 1
    while True:  # the body: parameters until `</function>` or `</tool_call>`
        j = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]
        tag = _BODY_TAGS.match_at(text, j)
        if tag is None:
            return None
        i = j + len(tag)
        if tag != PARAMETER:
            break
        end = text.find(">", i)
        if end < 0 or end - i > _MAX_NAME:
            return None
        key = text[i:end].strip()
        mark = _VALUE_MARKS.search(text, end + 1)
        if mark is None or mark.group() != PARAMETER_END:
            return None
        if not _close_ends(text, mark.end(), names, True, 0):
            return None
        prefix = args.key(key)
        is_string, nulls, conv = _convert(ctx, name, key)
        sink: ValueSink = (
            StringValue(
                prefix,
                trim="one_newline",
                null_word=bool(nulls),
                none_word=nulls == "null_none",
            )
            if is_string
            else RawValue(prefix, conv, trim="one_newline")
        )
        out.append(sink.feed(text[end + 1 : mark.start()]))
        out.append(sink.end())
        i = mark.end()
    out.append(ArgsJson.close())
    return (None, name, "".join(out)), i, tag


# A `<function=` block in the plainest shape, read by one regex: a name without blanks (so
# `strip` keeps it) or `_NOT_IN_NAME` characters, parameters separated by
# blanks, each value free of the tags `_VALUE_MARKS` holds (and of `<function`, `<tool_call`),
# so it ends at its own `</parameter>`, then `</function>`. Its closes are structural when the
# tool declares no parameters or every key is declared (`_close_ends`), else the tag-by-tag
# reader decides. The same values as its sinks (one newline trimmed each side; null words of
# a string; `_convert`'s types), written by one `dumps` of the dict (the encoder `ArgsJson`
# and the sinks use: equal bytes when no key repeats).
_PLAIN_VALUE = r"[^<]*(?:<(?!/?(?:parameter|function|tool_call))[^<]*)*"
_PLAIN_PARAM = rf"[ \t\r\n]*<parameter=([^>]*)>({_PLAIN_VALUE})</parameter>"
# the first `_PLAIN_GROUPS` parameters captured by the match itself, any further ones by
# `_PLAIN_PARAMS`; atomic, so a block that does not match fails without retrying the 2**8
# ways of spreading its parameters over the optional groups
_PLAIN_GROUPS = 8
_PLAIN_FUNCTION = re.compile(
    r"<function=([^<>{}\s]+)>"
    + atomic(
        rf"(?:{_PLAIN_PARAM})?" * _PLAIN_GROUPS
        + rf"((?:[ \t\r\n]*<parameter=[^>]*>{_PLAIN_VALUE}</parameter>)*)",
        "params",
    )
    + r"[ \t\r\n]*</function>"
)
_PLAIN_PARAMS = re.compile(_PLAIN_PARAM)
_NULL_WORDS = {"": (), "null": ("null",), "null_none": ("null", "none")}


def _plain_function(
    text: str, i: int, ctx: CallContext
) -> tuple[tuple[str | None, str, str], int, str] | None:
    m = _PLAIN_FUNCTION.match(text, i)
    if m is None:
        return None
    name, _, *groups = m.groups()  # the name, the atomic wrapper, then the parameters
    if len(name) > _MAX_NAME:
        return None
    params: list[tuple[str, str]] = [
        (k, v) for k, v in zip(groups[0:-1:2], groups[1:-1:2], strict=True) if k is not None
    ]
    if groups[-1]:
        params += _PLAIN_PARAMS.findall(groups[-1])
    declared = name in ctx.schemas
    names = _param_names(ctx, name) if declared else None
    args: dict[str, Any] = {}
    for raw_key, raw in params:
        key = raw_key.strip()
        if len(raw_key) > _MAX_NAME:
            return None  # not a key: the scanner ends the call there
        if names is not None and key not in names:
            return None  # an undeclared key: `_close_ends` probes further
        value = raw[1:] if raw[:1] == "\n" else raw
        if value[-1:] == "\n":
            value = value[:-1]
        _, nulls, conv = _convert(ctx, name, key) if declared else (True, "null", None)
        if conv is not None:
            args[key] = conv(value)
        elif len(value) == 4 and value.lower() in _NULL_WORDS[nulls]:
            args[key] = None
        else:
            args[key] = value
    if len(args) != len(params):
        return None  # a repeated key is written twice: the tag-by-tag reader does
    return (None, name, dumps(args)), m.end(), FUNCTION_END
