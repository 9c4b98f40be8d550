"""Incremental scanner for the ATEM markup in a Muse tool-channel body.

    <atem:function_calls>
    <atem:invoke name="X">
    <atem:parameter name="K">V</atem:parameter>
    </atem:invoke>
    </atem:function_calls>

Every complete `<atem:invoke>` is a call (the `function_calls` wrapper is optional, as in
other servers' parsers, and its close may be missing at the end of output). A value is JSON
when it parses as JSON, else the raw string, untrimmed. The scanner emits the call name when
the invoke tag is complete and each argument as soon as its type is known: a value whose first
non-blank character cannot start JSON is a string and streams as it arrives; any other value
goes out whole at `</atem:parameter>`. Every emitted prefix is a prefix of the final JSON.

Text outside the tags that is not blank is returned as `text` (content, verbatim); an invoke
that is malformed or unterminated is returned as `text` from its `<atem:invoke` on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from parsers.jsonstream import canonical_json, dumps, escape_text

BLOCK_OPEN = "<atem:function_calls>"
BLOCK_CLOSE = "</atem:function_calls>"
INVOKE_PREFIX = "<atem:invoke"
INVOKE_CLOSE = "</atem:invoke>"
PARAM_PREFIX = "<atem:parameter"
PARAM_CLOSE = "</atem:parameter>"


def _name_tag(element: str) -> re.Pattern[str]:
    """`<atem:ELEMENT name="N">` (or `'N'`): N is group 1 or 2 (`_tag_name`)."""
    return re.compile(rf"""<atem:{element}\s+name\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')\s*>""")


_INVOKE_TAG = _name_tag("invoke")
_PARAM_TAG = _name_tag("parameter")
_MAX_TAG = 512  # a tag longer than this is not a tag (bounds the hold-back)
_JSON_START = frozenset('{["-0123456789tfn')
_WS = frozenset(" \t\r\n")


def _name_tag_at(
    buf: str, tag: re.Pattern[str], final: bool
) -> re.Match[str] | Literal[False] | None:
    """The complete named tag at the start of `buf` (which starts with its prefix); False:
    wait, its `>` may still come; None: it is not that tag."""
    # only a `>` within the bound closes it: found sooner or later, the same answer
    end = buf.find(">", 0, _MAX_TAG)
    if end == -1:
        return False if len(buf) < _MAX_TAG and not final else None
    return tag.match(buf, 0, end + 1)


def _tag_name(match: re.Match[str]) -> str:
    return match.group(1) if match.group(1) is not None else match.group(2)


def value_json(raw: str) -> str:
    """A parameter value as JSON text: canonical JSON when it is JSON, else the raw string."""
    canonical = canonical_json(raw)
    return canonical if canonical is not None else dumps(raw)


@dataclass(slots=True)
class AtemEvent:
    kind: Literal["call", "args", "end", "text", "abort"]
    # call: the invoke name; args: an arguments fragment; end: the call is complete; text:
    # content text; abort: the current call failed and this is its text (verbatim).
    text: str
    closers: str = ""  # abort: text closing the arguments already emitted into valid JSON


@dataclass(slots=True, init=False)
class AtemScanner:
    """Feed tool-body text (framing tokens already removed); collect `events`; then `finish`."""

    events: list[AtemEvent]
    calls: int  # complete invokes so far
    _buf: str
    _mode: Literal["top", "invoke", "value"]
    # Growing text is kept in pieces, joined when read (`+=` on an attribute copies it all)
    _invoke_raw: list[str]  # the current invoke's text, returned verbatim if it fails
    _params: int
    _value: list[str]  # raw value text of the current parameter
    _value_is_string: bool | None  # None: undecided (leading blanks / JSON start)
    _value_sent: int  # pieces of _value already streamed as string text
    _pending: str  # separator and key, written with the value's first output
    _name: str  # the current invoke's name
    _committed: bool  # the current invoke's call went out
    _content_run: bool  # the text run since the last tag is content (not blank layout)
    _string_param: Callable[[str, str], bool] | None

    def __init__(self, string_param: Callable[[str, str], bool] | None = None) -> None:
        # (tool name, key) -> declared a string: its text is the value as written
        self._string_param = string_param
        self.events = []
        self.calls = 0
        self._buf = ""
        self._mode = "top"
        self._invoke_raw = []
        self._params = 0
        self._value = []
        self._value_is_string = None
        self._value_sent = 0
        self._pending = ""
        self._name = ""
        self._committed = False
        self._content_run = False

    def feed(self, text: str) -> None:
        self._buf += text
        self._scan(final=False)

    def finish(self) -> None:
        """End of the body: an unterminated invoke (or undecided tail) becomes content."""
        self._scan(final=True)
        if self._mode != "top":
            if self._mode == "value" and self._committed:
                self._buf = ""  # a cut `</atem:parameter>`: markup, dropped (never repaired)
            self._fail_invoke()
        if self._buf:
            self._text(self._buf)
            self._buf = ""

    def _emit(self, kind: Literal["call", "args", "text"], text: str) -> None:
        if not text and kind != "call":
            return
        last = self.events[-1] if self.events else None
        if last is not None and last.kind == kind and kind != "call":
            last.text += text
        else:
            self.events.append(AtemEvent(kind, text))

    def _text(self, text: str) -> None:
        self._emit("text", text)

    def _scan(self, final: bool) -> None:
        while self._buf:
            progressed = (
                self._scan_value(final)
                if self._mode == "value"
                else self._scan_invoke(final)
                if self._mode == "invoke"
                else self._scan_top(final)
            )
            if not progressed:
                return

    def _tag_at(self, buf: str, final: bool, *tags: str) -> tuple[str | None, bool]:
        """(tag, decided): the tag `buf` starts with, or (None, False) while it may still."""
        for tag in tags:
            if buf.startswith(tag):
                return tag, True
            if not final and tag.startswith(buf):
                return None, False
        return None, True

    def _scan_top(self, final: bool) -> bool:
        buf = self._buf
        lt = buf.find("<")
        if lt == -1 and not final:
            # A run of text is blank layout or content, judged whole; once it has something
            # other than blanks it is content and goes out as it comes (held whole, a long
            # run was rescanned with each chunk: quadratic).
            if self._content_run or buf.strip():
                self._content_run = True
                self._text(buf)
                self._buf = ""
            return False
        if lt != 0:
            head = buf if lt == -1 else buf[:lt]
            # Blank text between tags is layout; other text is content, kept verbatim.
            if self._content_run or head.strip():
                self._text(head)
            self._content_run = False
            self._buf = buf[len(head) :]
            return True
        self._content_run = False
        tag, decided = self._tag_at(buf, final, BLOCK_OPEN, BLOCK_CLOSE, INVOKE_PREFIX)
        if not decided:
            return False
        if tag in (BLOCK_OPEN, BLOCK_CLOSE):
            self._buf = buf[len(tag) :]
            return True
        if tag == INVOKE_PREFIX:
            match = _name_tag_at(buf, _INVOKE_TAG, final)
            if match is False:
                return False
            if match is None or not _tag_name(match).strip():
                # not an invoke tag, or one with a blank name: not a call (text)
                self._text(buf[: len(INVOKE_PREFIX)])
                self._buf = buf[len(INVOKE_PREFIX) :]
                return True
            self._invoke_raw = [match.group(0)]
            self._buf = buf[match.end() :]
            self._mode = "invoke"
            self._params = 0
            self._name = _tag_name(match)
            self._committed = False
            return True
        self._text("<")
        self._buf = buf[1:]
        return True

    def _commit(self) -> None:
        """The invoke looks real (a parameter or its close arrived): the call goes out."""
        if not self._committed:
            self._committed = True
            self._emit("call", self._name)
            self._emit("args", "{")

    def _fail_invoke(self) -> None:
        """The current invoke is malformed or unterminated.

        Before it was committed nothing went out: its text is content, verbatim. After, the
        runner force-closes the call (`abort`, with the text closing its JSON).
        """
        if not self._committed:
            self._text("".join(self._invoke_raw))
        else:
            closers = '"}' if self._mode == "value" and self._value_is_string else "}"
            self.events.append(AtemEvent("abort", "".join(self._invoke_raw), closers))
        self._invoke_raw = []
        self._mode = "top"

    def _scan_invoke(self, final: bool) -> bool:
        buf = self._buf
        i = 0
        while i < len(buf) and buf[i] in _WS:
            i += 1
        if i:
            self._invoke_raw.append(buf[:i])
            self._buf = buf = buf[i:]
            if not buf:
                return False
        tag, decided = self._tag_at(buf, final, INVOKE_CLOSE, PARAM_PREFIX)
        if not decided:
            return False
        if tag == INVOKE_CLOSE:
            self._commit()
            self._buf = buf[len(tag) :]
            self._emit("args", "}")
            self.events.append(AtemEvent("end", ""))
            self.calls += 1
            self._invoke_raw = []
            self._mode = "top"
            return True
        if tag == PARAM_PREFIX:
            match = _name_tag_at(buf, _PARAM_TAG, final)
            if match is False:
                return False
            if match is not None:
                self._commit()
                key = _tag_name(match)
                self._invoke_raw.append(match.group(0))
                self._buf = buf[match.end() :]
                sep = "," if self._params else ""
                self._params += 1
                self._pending = f"{sep}{dumps(key)}:"
                self._mode = "value"
                self._value = []
                declared = self._string_param
                self._value_is_string = True if declared and declared(self._name, key) else None
                if self._value_is_string:
                    self._emit("args", self._pending + '"')
                    self._pending = ""
                self._value_sent = 0
                return True
        # Anything else inside an invoke is malformed: the invoke goes back to content.
        self._fail_invoke()
        return True

    def _scan_value(self, final: bool) -> bool:
        buf = self._buf
        close = buf.find(PARAM_CLOSE)
        if close == -1:
            # Keep back a possible cut `</atem:parameter>`; the rest is value text. At the end
            # of output it is never released: the cut call keeps what was streamed.
            keep = 0
            lt = buf.rfind("<")
            if lt != -1 and PARAM_CLOSE.startswith(buf[lt:]):
                keep = len(buf) - lt
            take = buf[: len(buf) - keep]
            self._buf = buf[len(take) :]
            self._value_grow(take)
            return False
        self._value_grow(buf[:close])
        self._buf = buf[close + len(PARAM_CLOSE) :]
        self._invoke_raw.append(PARAM_CLOSE)
        if self._value_is_string:
            self._emit("args", '"')
        else:
            self._emit("args", self._pending + value_json("".join(self._value)))
            self._pending = ""
        self._mode = "invoke"
        return True

    def _value_grow(self, text: str) -> None:
        if not text:
            return
        self._value.append(text)
        self._invoke_raw.append(text)
        if self._value_is_string is None:
            head = "".join(self._value).lstrip()  # (blanks so far: batched by BlankRuns)
            if not head:
                return
            self._value_is_string = head[0] not in _JSON_START
            if self._value_is_string:
                self._emit("args", self._pending + '"')
                self._pending = ""
        if self._value_is_string:
            self._emit("args", escape_text("".join(self._value[self._value_sent :])))
            self._value_sent = len(self._value)


# --- whole-output batch grammar (parsers.batch) ---
# A whole tool body in the common shape: blanks and `function_calls` tags between complete
# invokes of complete parameters. Exact by `AtemScanner`'s rules: blank text between tags is
# layout, a value runs to the first `</atem:parameter>`, a declared string or a value whose
# first non-blank character cannot start JSON is the string as written, any other value its
# canonical JSON when it is JSON, else the string. Anything else (text between tags, a
# blank invoke name, a malformed or unterminated tag): None, the runner's.

_B_TOP = re.compile(
    r"[ \t\r\n]*(?:(?P<block><atem:function_calls>|</atem:function_calls>)"
    r"|(?P<invoke>(?=<atem:invoke))|(?P<end>\Z))"
)
# blanks, then a parameter tag (`_PARAM_TAG`) or the invoke's close
_B_PARAM = re.compile(
    r"""[ \t\r\n]*(?:<atem:parameter\s+name\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')\s*>"""
    r"|(</atem:invoke>))"
)
_B_VALUE = r"[^<]*(?:<(?!/atem:parameter>)[^<]*)*"  # up to the first `</atem:parameter>`
# a whole invoke in the most common spelling (`name="..."`, no blanks inside tags): its name,
# and its parameters for `_B_PARAMS` (each value to the first `</atem:parameter>`, as the
# scanner reads it: a value cannot hold that close). Every repeat in these regexes is followed
# by a tag its body cannot hold, so a failed match gives each character back once: linear
# without possessive quantifiers (see `parsers.atomic` for why there are none).
_B_INVOKE = re.compile(
    rf'<atem:invoke name="([^"<>]*)">((?:[ \t\r\n]*<atem:parameter name="[^"<>]*">{_B_VALUE}'
    r"</atem:parameter>)*)[ \t\r\n]*</atem:invoke>"
)
_B_PARAMS = re.compile(rf'<atem:parameter name="([^"<>]*)">({_B_VALUE})</atem:parameter>')
# the longest name a tag in the common spelling may hold within `_MAX_TAG`
_MAX_NAME_IN = {e: _MAX_TAG - len(f'<atem:{e} name="">') for e in ("invoke", "parameter")}
_key_json = lru_cache(maxsize=512)(dumps)  # `"key":` of the keys a response repeats


def batch_calls(
    text: str, pos: int, end: int, string_param: Callable[[str, str], bool] | None
) -> list[tuple[str, str]] | None:
    """The calls (invoke name, arguments) of the tool body `text[pos:end]`, or None."""
    calls: list[tuple[str, str]] = []
    while True:
        top = _B_TOP.match(text, pos, end)
        if top is None:
            return None  # text between tags: content, the runner's
        pos = top.end()
        kind = top.lastgroup
        if kind == "end":
            return calls
        if kind == "block":
            continue
        whole = _B_INVOKE.match(text, pos, end)
        if whole is not None:
            name, params = whole.groups()
            if not name.strip():
                return None  # not a call: text
            found = _B_PARAMS.findall(params)
            # a tag longer than `_MAX_TAG` is not one (`_name_tag_at`): the runner's
            if len(name) > _MAX_NAME_IN["invoke"] or any(
                len(k) > _MAX_NAME_IN["parameter"] for k, _ in found
            ):
                return None
            pos = whole.end()
            calls.append((name, _batch_args(name, found, string_param)))
            continue
        head = _INVOKE_TAG.match(text, pos, end)
        if head is None or head.end() - pos > _MAX_TAG:
            return None
        name = _tag_name(head)
        if not name.strip():
            return None  # not a call: text
        pos = head.end()
        pairs: list[tuple[str, str]] = []
        while True:
            param = _B_PARAM.match(text, pos, end)
            if param is None:
                return None  # malformed: the invoke is text again
            key, key2, closed = param.groups()
            if closed is not None:
                pos = param.end()
                break
            if param.end() - text.index("<", param.start()) > _MAX_TAG:
                return None  # not a tag (`_name_tag_at`): the runner's
            if key is None:
                key = key2
            start = param.end()
            close = text.find(PARAM_CLOSE, start, end)
            if close == -1:
                return None  # cut off
            pairs.append((key, text[start:close]))
            pos = close + len(PARAM_CLOSE)
        calls.append((name, _batch_args(name, pairs, string_param)))


def _batch_args(
    name: str, pairs: list[tuple[str, str]], string_param: Callable[[str, str], bool] | None
) -> str:
    """The arguments JSON of an invoke's (key, raw value) parameters, as the scanner writes it."""
    parts = []
    for key, value in pairs:
        head = value[:1]
        if head.isspace():
            head = value.lstrip()[:1]
        if (head and head not in _JSON_START) or (
            string_param is not None and string_param(name, key)
        ):
            parts.append(f'{_key_json(key)}:"{escape_text(value)}"')
        else:
            parts.append(f"{_key_json(key)}:{value_json(value)}")
    return "{" + ",".join(parts) + "}"
