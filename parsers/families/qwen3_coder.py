"""Qwen3-Coder XML-style calls (`qwen3_coder`).

`<tool_call>` `<function=NAME>` (`<parameter=KEY>` VALUE `</parameter>`)* `</function>`
`</tool_call>`; a bare `<function=NAME>` block is a call too. Values: one surrounding newline
trimmed, HTML entities decoded, typed by the tool's JSON schema (`parsers.schema`); a value
that is `null` is null whatever the type; undeclared parameters and tools stay strings.
A missing `</parameter>` ends the value at the next `<parameter=`, `</function>` or
`</tool_call>`. Several `<function=` blocks may share one `<tool_call>` wrapper. A Hermes-style
JSON object inside `<tool_call>` (the model mixing formats) is read as a Hermes call.
"""

from __future__ import annotations

from typing import Any

from parsers.families.base import (
    CallArgs,
    CallBegin,
    CallContext,
    CallEnd,
    CallScanner,
    Event,
    ScanResult,
    ToolGrammar,
)
from parsers.families.hermes import HermesScanner
from parsers.families.xmlargs import ArgsJson, RawValue, StringValue, TagBuffer, ValueSink
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
_VALUE_END = MarkerSet((PARAMETER_END, PARAMETER, FUNCTION_END, TOOL_CALL_END))
_AFTER_TAGS = MarkerSet((TOOL_CALL_END, FUNCTION))
_BARE_AFTER_TAGS = MarkerSet((TOOL_CALL_END,))
_MAX_NAME = 256
# a function name never holds blanks, tags or template braces: `<function={{ tc.name }}>`
# (an unrendered Jinja template in prose) is text, not a call
_NOT_IN_NAME = frozenset("<>{} \t\r\n")


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
        return _double_decoded(convert_value(text, schema), t) if types else text

    return False, "", conv


def _double_decoded(value: Any, t: str) -> Any:
    """An object/array value the model wrote as a JSON string of its repr
    (`"{'key': 'value'}"`, from templates that ran `json.dumps(str(dict))`) is decoded again."""
    if isinstance(value, str) and t in ("object", "array", "dict", "list"):
        again = convert_by_type(value, t)
        if isinstance(again, (dict, list)):
            return again
    return value


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

    def _raw(self) -> str:
        return self._start + "".join(self._fed)

    def _reject(self) -> ScanResult:
        return ScanResult([], "reject", "".join(self._fed))

    def _close(self, events: list[Event], complete: bool) -> None:
        if self._sink is not None:
            events.append(CallArgs(self._sink.force_end()))
            self._sink = None
        events.append(CallArgs(ArgsJson.close()))
        events.append(CallEnd(complete, "" if complete else self._raw()))
        self._state = "after"

    def feed(self, text: str) -> ScanResult:
        self._fed.append(text)
        if self._hermes is not None:
            return self._delegated(self._hermes.feed(text))
        self._buf.add(text)
        return self._run(final=False)

    def finish(self) -> ScanResult:
        if self._hermes is not None:
            return self._delegated(self._hermes.finish())
        res = self._run(final=True)
        if res.status != "more":
            return res
        events = res.events
        if not self._committed:
            return self._reject()
        if self._state in ("after", "bare_after"):
            return ScanResult(events, "done", self._buf.rest())
        self._close(events, complete=False)
        return ScanResult(events, "done")

    def _delegated(self, res: ScanResult) -> ScanResult:
        return self._reject() if res.status == "reject" else res

    def _run(self, final: bool) -> ScanResult:
        events: list[Event] = []
        buf = self._buf
        while True:
            st = self._state
            if st == "open":
                if not buf.skip_blanks():
                    return ScanResult(events)
                if buf.text[0] == "{":
                    self._hermes = HermesScanner()
                    return self._delegated(self._hermes.feed(buf.rest()))
                tag = buf.starts(_OPEN_TAGS)
                if tag is None:
                    return ScanResult(events)
                if tag is False:
                    return self._reject()
                buf.take(len(tag))
                self._state = "name"
            elif st == "name":
                end = buf.text.find(">")
                if end < 0:
                    if len(buf.text) > _MAX_NAME or "\n" in buf.text or "<" in buf.text:
                        if not self._committed:
                            return self._reject()
                        return ScanResult(events, "done", buf.rest())
                    return ScanResult(events)
                name = buf.text[:end].strip()
                if not name or any(c in _NOT_IN_NAME for c in name):
                    if not self._committed:
                        return self._reject()
                    return ScanResult(events, "done", buf.rest())
                buf.take(end + 1)
                self._name = name
                self._args = ArgsJson()
                events.append(CallBegin(name))
                events.append(CallArgs(ArgsJson.open()))
                self._committed = True
                self._state = "body"
            elif st == "body":
                blanks, tag = buf.starts_after_blanks(_BODY_TAGS)
                if tag is None:
                    return ScanResult(events)
                if tag is False:
                    # text where a tag belongs: the call ends here, the text is content
                    self._close(events, complete=False)
                    return ScanResult(events, "done", buf.rest())
                buf.take(blanks + len(tag))
                if tag == PARAMETER:
                    self._state = "key"
                else:
                    self._close(events, complete=True)
                    if tag == TOOL_CALL_END:
                        return ScanResult(events, "done", buf.rest())
                    if not self._wrapped:
                        # a bare block the model still closed with `</tool_call>` (it
                        # dropped only the opener): the closer is markup, not content
                        self._state = "bare_after"
            elif st == "bare_after":
                blanks, tag = buf.starts_after_blanks(_BARE_AFTER_TAGS)
                if tag is None:
                    return ScanResult(events)
                if tag is not False:
                    buf.take(blanks + len(tag))
                return ScanResult(events, "done", buf.rest())
            elif st == "key":
                end = buf.text.find(">")
                if end < 0:
                    if len(buf.text) > _MAX_NAME:
                        self._close(events, complete=False)
                        return ScanResult(events, "done", buf.rest())
                    return ScanResult(events)
                key = buf.take(end + 1)[:-1].strip()
                prefix = self._args.key(key)
                is_string, nulls, conv = _convert(self._ctx, self._name, key)
                if is_string:
                    self._sink = StringValue(
                        prefix,
                        trim="one_newline",
                        entities=True,
                        null_word=bool(nulls),
                        none_word=nulls == "null_none",
                    )
                else:
                    self._sink = RawValue(prefix, conv, trim="one_newline", entities=True)
                self._state = "value"
            elif st == "value":
                sink = self._sink
                assert sink is not None
                before, tag = buf.until(_VALUE_END, final)
                out = sink.feed(before)
                if out:
                    events.append(CallArgs(out))
                if tag is None:
                    return ScanResult(events)
                events.append(CallArgs(sink.end()))
                self._sink = None
                if tag == PARAMETER_END:
                    buf.take(len(tag))
                self._state = "body"
            else:  # after </function> inside <tool_call>: </tool_call> or another function
                blanks, tag = buf.starts_after_blanks(_AFTER_TAGS)
                if tag is None:
                    return ScanResult(events)
                if tag is False:
                    return ScanResult(events, "done", buf.rest())
                buf.take(blanks + len(tag))
                if tag == TOOL_CALL_END:
                    return ScanResult(events, "done", buf.rest())
                self._state = "name"


class Qwen3CoderGrammar(ToolGrammar):
    name = "qwen3_coder"
    start_markers = (TOOL_CALL, FUNCTION)

    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        # a bare block may still end with a stray `</tool_call>` that belongs to it; the
        # scanner stops at the first text after `</function>` (the rest is prose again)
        return (TOOL_CALL_END,)

    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        return Qwen3CoderScanner(start, ctx)
