"""Incremental scanner for one Gemma 4 tool call: the text after `<|tool_call>`.

Grammar (docs/parsers.md, Gemma 4): `call:NAME{ARGS}<tool_call|>`, where ARGS is a
brace-less object body with bare keys, `<|"|>`-delimited strings, numbers, `true`/`false`,
`null`/`none`/`nil` (any case), nested `{}` and `[]`, and `key:` with no value meaning `""`.

The scanner turns that grammar into OpenAI `arguments` JSON *while it reads*: it emits the
call name once the `{` after it arrives, string text as it arrives, and every other value only
when its terminator arrives, so every emitted prefix is a prefix of the final JSON. Batch
parsing feeds the same scanner the whole text, so stream and batch cannot disagree.

Tolerated beyond the grammar (the model's own slips, as other servers accept them): keys
wrapped in `<|"|>`, whitespace around keys/values, trailing commas, and a bare word value
(`unit:celsius`) which becomes a string. Anything else is an error at the offending
character, so the runner can return the call's text as content verbatim and rescan from there
(a malformed call never swallows the call after it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from parsers.jsonstream import escape_text

CALL_START = "<|tool_call>"
CALL_END = "<tool_call|>"
# Gemma 4 sometimes closes a call with its end-of-turn token instead (other servers accept it);
# only right after the arguments object.
TURN_END = "<turn|>"
STRING_DELIM = '<|"|>'
CALL_PREFIX = "call:"

# Markers that may begin at a `<` inside a call (outside strings).
_ANGLE_TOKENS = (STRING_DELIM, CALL_END, CALL_START, TURN_END)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_STOP = frozenset(":,{}[]<")
_WS = frozenset(" \t\r\n")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_NULLS = frozenset({"null", "none", "nil"})

Mode = Literal["prefix", "name", "brace", "body", "string", "bare", "tail", "done", "error"]


def json_string(text: str) -> str:
    """JSON string literal, non-ASCII kept (OpenAI wire format)."""
    return json.dumps(text, ensure_ascii=False)


_BARE_STOP = re.compile(r"[,}\]<]")
_NAME_RUN = re.compile(r"[A-Za-z0-9_.-]+")


def bare_value_json(token: str) -> str:
    """JSON for an undelimited value: number, boolean, null, or (a slip) a bare word string."""
    text = token.strip()
    if not text:
        return '""'
    lowered = text.lower()
    if lowered == "true":
        return "true"
    if lowered == "false":
        return "false"
    if lowered in _NULLS:
        return "null"
    if _JSON_NUMBER.fullmatch(text):
        return text  # canonical JSON keeps numbers as written
    if _INT_RE.fullmatch(text):
        return str(int(text))
    if _FLOAT_RE.fullmatch(text):
        number = float(text)
        if number == number and number not in (float("inf"), float("-inf")):
            return json.dumps(number)
    return json_string(text)


@dataclass(slots=True)
class _Frame:
    kind: Literal["obj", "arr"]
    # obj: "key" (expect key or close), "key_bare", "colon", "value", "after"
    # arr: "value" (expect element or close), "after"
    state: str
    count: int = 0


@dataclass(slots=True, init=False)
class CallReader:
    """Feed the text following `<|tool_call>`; read `name`, `fragments`, `mode`.

    `feed` returns "" while the call is open. Once it ended (`mode == "done"`) it returns the
    text after `<tool_call|>`; once it failed (`mode == "error"`) it returns the text from the
    offending character on, to be scanned again as ordinary text. `raw` is the call's decided
    text so far (`pending` holds an undecided tail), for returning a failed or unterminated call
    verbatim.
    """

    # Growing text is kept as a list of pieces joined once when read: `self.x += piece` on an
    # attribute copies the whole string each time (CPython extends in place only a local
    # variable), which made a long bare value, key, name or call quadratic across feeds.
    name: str | None
    # The call looks real: its first `key:` (or its closing brace) arrived. Before that a
    # failure is "not a call" and the runner returns the text verbatim.
    committed: bool
    fragments: list[str]  # argument JSON pieces not yet taken
    mode: Mode
    _raw: list[str]
    _buf: str  # fed but undecided text (a possible marker prefix), part of `raw`
    _name: list[str]
    _stack: list[_Frame]
    _key: list[str]
    _string_is_key: bool
    _bare: list[str]
    _pending: str  # separator/key written with the next value's first output

    def __init__(self) -> None:
        self.name = None
        self.committed = False
        self.fragments = []
        self.mode = "prefix"
        self._raw = []
        self._buf = ""
        self._name = []
        self._stack = []
        self._key = []
        self._string_is_key = False
        self._bare = []
        self._pending = ""

    @property
    def raw(self) -> str:
        """The call's decided text so far (after `<|tool_call>`)."""
        return "".join(self._raw)

    @property
    def finished(self) -> bool:
        return self.mode in ("done", "error")

    def take_fragments(self) -> str:
        out = "".join(self.fragments)
        self.fragments.clear()
        return out

    def feed(self, chunk: str) -> str:
        """Scan `chunk`; return the text after the call (or from the failing character on)."""
        if self.finished:
            return chunk
        text = self._buf + chunk
        self._buf = ""
        stop = self._scan(text)
        if self.finished:
            self._raw.append(text[:stop])
            return text[stop:]
        self._raw.append(text[: len(text) - len(self._buf)])
        return ""

    def string_run(self, chunk: str) -> str | None:
        """Streaming fast path: inside a string value with nothing undecided, a chunk without
        `<` (no delimiter can start) is all string text: what `feed` does with it, and the
        argument fragment it makes (the fragments taken so far are none); else None, having
        changed nothing."""
        if (
            self.mode != "string"
            or self._buf
            or self._string_is_key
            or self.fragments
            or not chunk
            or "<" in chunk
        ):
            return None
        self._raw.append(chunk)
        return escape_text(chunk)

    @property
    def pending(self) -> str:
        """Fed text not decided yet (a possible marker prefix): call text if output ends."""
        return self._buf

    def _scan(self, text: str) -> int:
        i = 0
        n = len(text)
        while i < n:
            mode = self.mode
            c = text[i]
            if mode == "string":
                j = text.find("<", i)
                if j == -1:
                    self._string_text(text[i:])
                    return n
                if j > i:
                    self._string_text(text[i:j])
                    i = j
                rest = text[i : i + len(STRING_DELIM)]
                if rest == STRING_DELIM:
                    self._string_close()
                    i += len(STRING_DELIM)
                elif STRING_DELIM.startswith(rest):  # a possible delimiter cut by the chunk
                    self._buf = text[i:]
                    return n
                else:
                    self._string_text("<")
                    i += 1
                continue
            if c == "<" and mode not in ("prefix", "name"):
                token = self._angle_token(text, i)
                if token is None:  # undecided: keep the tail for the next chunk
                    self._buf = text[i:]
                    return n
                if token == STRING_DELIM and mode in ("body",):
                    if not self._string_open():
                        return self._fail(i)
                    i += len(STRING_DELIM)
                    continue
                if token in (CALL_END, TURN_END) and mode == "tail":
                    self.mode = "done"
                    return i + len(token)
                if token or mode != "bare":
                    return self._fail(i)
                self._bare.append("<")  # a plain `<` inside a bare word
                i += 1
                continue
            if mode == "prefix":
                # Blanks, and a stray colon (`<|tool_call>:call:f{…}`, seen from Gemma 4 and
                # accepted by vLLM), may precede `call:`.
                if (c in _WS or c == ":") and not self._name:
                    i += 1
                    continue
                expected = CALL_PREFIX[len(self._name)]
                if c != expected:
                    return self._fail(i)
                self._name.append(c)
                if len(self._name) == len(CALL_PREFIX):
                    self._name = []
                    self.mode = "name"
                i += 1
            elif mode == "name":
                if c in _NAME_CHARS:
                    m = _NAME_RUN.match(text, i)
                    assert m is not None
                    self._name.append(m.group())
                    i = m.end()
                elif c == "{" and self._name:
                    self.name = "".join(self._name)
                    self._push("obj")
                    self.mode = "body"
                    i += 1
                elif c in _WS and self._name:
                    self.mode = "brace"
                    i += 1
                else:
                    return self._fail(i)
            elif mode == "brace":
                if c in _WS:
                    i += 1
                elif c == "{":
                    self.name = "".join(self._name)
                    self._push("obj")
                    self.mode = "body"
                    i += 1
                else:
                    return self._fail(i)
            elif mode == "tail":
                if c in _WS:
                    i += 1
                else:
                    return self._fail(i)
            elif mode == "bare":
                if c in ",}]":
                    self._bare_close()
                    continue  # the terminator is handled by the enclosing container
                # the whole run up to a terminator or `<` at once: a character at a time
                # copies the growing word each time (quadratic on a long bare run)
                m = _BARE_STOP.search(text, i + 1)
                j = m.start() if m is not None else n
                self._bare.append(text[i:j])
                i = j
            elif not self._body_char(c):
                return self._fail(i)
            else:
                i += 1
        return n

    def _angle_token(self, text: str, i: int) -> str | None:
        """The marker starting at text[i] ('' if none can), or None while undecided."""
        rest = text[i : i + len(CALL_START)]
        for token in _ANGLE_TOKENS:
            if rest.startswith(token):
                return token
        for token in _ANGLE_TOKENS:
            if token.startswith(rest):
                return None
        return ""

    def _fail(self, i: int) -> int:
        self.mode = "error"
        return i

    def closers(self) -> str:
        """Text that closes the arguments emitted so far into valid JSON (force-close). A
        complete trailing number or literal (`x:1` cut by the end of output) is kept."""
        out = '"' if self.mode == "string" and not self._string_is_key else ""
        if self.mode == "bare":
            token = "".join(self._bare).strip()
            if _JSON_NUMBER.fullmatch(token) or token.lower() in ("true", "false", *_NULLS):
                out = self._pending + bare_value_json(token)
        return out + "".join("}" if f.kind == "obj" else "]" for f in reversed(self._stack))

    def _out(self, text: str) -> None:
        # A key or separator goes out only with its value, so emitted text never ends in a
        # dangling `"key":` and closers() can always complete it.
        self.fragments.append(self._pending + text)
        self._pending = ""

    def _push(self, kind: Literal["obj", "arr"]) -> None:
        self._stack.append(_Frame(kind, "key" if kind == "obj" else "value"))
        self._out("{" if kind == "obj" else "[")

    def _pop(self) -> None:
        frame = self._stack.pop()
        self._pending = ""
        self.fragments.append("}" if frame.kind == "obj" else "]")
        if self._stack:
            self._stack[-1].state = "after"
        else:
            self.mode = "tail"
            self.committed = True

    def _begin_value(self) -> None:
        """Separator before a value in an array (object members were introduced by the key)."""
        frame = self._stack[-1]
        if frame.kind == "arr":
            self._pending = "," if frame.count else ""
            frame.count += 1
        frame.state = "after"

    def _body_char(self, c: str) -> bool:
        frame = self._stack[-1]
        if frame.kind == "obj":
            if frame.state == "key":
                if c in _WS or c == ",":
                    return True
                if c == "}":
                    self._pop()
                    return True
                if c in _KEY_STOP:
                    return False
                self._key = [c]
                frame.state = "key_bare"
                return True
            if frame.state == "key_bare":
                if c == ":":
                    self._emit_key()
                    return True
                if c in _KEY_STOP:
                    return False
                self._key.append(c)
                return True
            if frame.state == "colon":
                if c in _WS:
                    return True
                if c == ":":
                    self._emit_key()
                    return True
                return False
            if frame.state == "value":
                if c in _WS:
                    return True
                if c in ",}":  # `key:` with no value is ""
                    self._out('""')
                    frame.state = "after"
                    return self._body_char(c)
                return self._value_start(c)
            # after a member
            if c in _WS:
                return True
            if c == ",":
                frame.state = "key"
                return True
            if c == "}":
                self._pop()
                return True
            return False
        # array
        if frame.state == "value":
            if c in _WS or c == ",":
                return True
            if c == "]":
                self._pop()
                return True
            return self._value_start(c)
        if c in _WS:
            return True
        if c == ",":
            frame.state = "value"
            return True
        if c == "]":
            self._pop()
            return True
        return False

    def _emit_key(self) -> None:
        frame = self._stack[-1]
        key = "".join(self._key).strip()
        self._key = []
        sep = "," if frame.count else ""
        frame.count += 1
        self.committed = True
        self._pending = f"{sep}{json_string(key)}:"
        frame.state = "value"

    def _value_start(self, c: str) -> bool:
        if c in "]}:":
            return False
        self._begin_value()
        if c == "{":
            self._push("obj")
        elif c == "[":
            self._push("arr")
        else:
            self.mode = "bare"
            self._bare = [c]
        return True

    def _string_open(self) -> bool:
        frame = self._stack[-1]
        if frame.kind == "obj" and frame.state == "key":
            self._string_is_key = True
            self._key = []
        elif frame.state == "value":
            self._string_is_key = False
            self._begin_value()
            self._out('"')
        else:
            return False
        self.mode = "string"
        return True

    def _string_text(self, text: str) -> None:
        if self._string_is_key:
            self._key.append(text)
        else:
            self.fragments.append(escape_text(text))

    def _string_close(self) -> None:
        self.mode = "body"
        if self._string_is_key:
            self._stack[-1].state = "colon"
            return
        self.fragments.append('"')

    def _bare_close(self) -> None:
        self._out(bare_value_json("".join(self._bare)))
        self._bare = []
        self.mode = "body"
