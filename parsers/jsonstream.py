"""Incremental JSON reading with canonical re-serialization (V2 argument streaming).

`JsonValueReader` reads exactly one JSON value from text fed in arbitrary chunks and writes
its canonical form as it goes: no insignificant whitespace, strings re-escaped the way
`json.dumps(..., ensure_ascii=False)` does, numbers kept as written. With `keep_space` the
blanks between tokens are kept as the model wrote them (Hermes-style JSON arguments: the
model's `{"a": 1}` stays `{"a": 1}`, a compact `{"a":1}` stays compact). String text is written as
it arrives, punctuation right away, numbers and literals once complete; so every output prefix
is a prefix of the final canonical text, which is also the `arguments` string of the call.
`canonical_json` runs the same reader over a whole text, so batch and stream agree exactly.
"""

from __future__ import annotations

import json
import re

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_STRING_RUN = re.compile(r'[^"\\]+')
_WS = " \t\r\n"
_NUM_CHARS = frozenset("+-0123456789.eE")
_LITERALS = ("true", "false", "null")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# What the encoder escapes (it keeps lone surrogates as they are with ensure_ascii=False, so
# they need no check: a class holding the surrogate range took ~0.6 ms to compile, per process).
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def dumps(value: object) -> str:
    """Canonical JSON text: compact, non-ASCII kept (OpenAI `arguments` wire format)."""
    return _ENCODER.encode(value)


def escape_text(text: str) -> str:
    """The inside of a JSON string literal for `text` (no surrounding quotes)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return text  # the common case: nothing to escape
    return _ENCODER.encode(text)[1:-1]


class JsonError(ValueError):
    pass


class JsonValueReader:
    """Reads one JSON value incrementally; see the module docstring.

    `feed(text, pos)` consumes from `text[pos:]` and returns (output fragment, next position).
    It stops right after the value ends (`done`), or at the end of `text`. Malformed input sets
    `error` (and stops at the offending position). `end()` is end of input: a trailing number
    completes the value there. `closers()` gives the text that would close an unfinished value
    (used to force-close a call's arguments). `keep_strings` collects the decoded text of a
    top-level string value in `string_value`.
    """

    __slots__ = (
        "_esc",
        "_expect",
        "_hi",
        "_in_key",
        "_in_string",
        "_keybuf",
        "_pending",
        "_stack",
        "_strbuf",
        "_tok",
        "_uni",
        "done",
        "error",
        "first",
        "keep_space",
        "keep_strings",
        "string_value",
    )

    def __init__(self, keep_strings: bool = False, keep_space: bool = False) -> None:
        self.keep_space = keep_space
        self._stack: list[str] = []  # "{" or "["
        # what the reader expects next: "value", "key" (or "}" when first), "colon", "comma"
        self._expect = "value"
        self._in_string = False
        self._in_key = False
        self._esc = False
        self._uni: str | None = None  # hex digits of a \\u escape being read
        self._hi: str | None = None  # a high surrogate waiting for its low half
        # number or literal being read, in pieces (joined when it ends: `+=` on an attribute
        # copies the whole token per character, quadratic on a long number)
        self._tok: list[str] = []
        self._keybuf: list[str] = []
        # Separator and key not yet written: they go out with the first output of the next
        # value, so the output never ends in a dangling "," or "key": (see closers()).
        self._pending = ""
        self._strbuf: list[str] = []
        self.first = ""  # first non-whitespace character of the value
        self.done = False
        self.error: str | None = None
        self.keep_strings = keep_strings
        self.string_value: str | None = None

    # -- helpers --

    def _fail(self, msg: str) -> None:
        self.error = msg

    def _value_done(self) -> None:
        if not self._stack:
            self.done = True
        else:
            self._expect = "comma"

    def _finish_token(self) -> str:
        tok = "".join(self._tok)
        self._tok = []
        if tok in _LITERALS or _NUMBER.match(tok):
            self._value_done()
            pre, self._pending = self._pending, ""
            return pre + tok
        self._fail(f"invalid JSON token {tok!r}")
        return ""

    def _string_char(self, ch: str) -> str:
        """A decoded character of the current string: key buffer or output."""
        if self._in_key:
            self._keybuf.append(ch)
            return ""
        if self.keep_strings and not self._stack:
            self._strbuf.append(ch)
        return escape_text(ch)

    def _flush_hi(self) -> str:
        if self._hi is None:
            return ""
        hi, self._hi = self._hi, None
        return self._lone(hi)

    def _lone(self, ch: str) -> str:
        """A lone surrogate from a `\\u` escape: kept (docs/parsers.md, "Lone surrogates"),
        in a key or kept string as the character (what the C decoder gives), in the output
        as its escape (the only way to write it in text that must be UTF-8)."""
        if self._in_key:
            self._keybuf.append(ch)
            return ""
        if self.keep_strings and not self._stack:
            self._strbuf.append(ch)
        return "\\u" + format(ord(ch), "04x")

    def _close_string(self) -> str:
        out = self._flush_hi()
        self._in_string = False
        if self._in_key:
            self._in_key = False
            key = "".join(self._keybuf)
            self._keybuf.clear()
            self._expect = "colon"
            self._pending += json.dumps(key, ensure_ascii=False) + ":"
            return out
        if self.keep_strings and not self._stack:
            self.string_value = "".join(self._strbuf)
        self._value_done()
        return out + '"'

    # -- main loop --

    def string_run(self, text: str, pos: int = 0) -> str | None:
        """Streaming fast path: when all of `text[pos:]` is text of the current string (no
        quote, backslash or escape pending), what `feed` does with it and its output; else
        None, having changed nothing."""
        if self._in_string and not self._esc and self._uni is None and self._hi is None:
            m = _STRING_RUN.match(text, pos)
            if m is not None and m.end() == len(text) and not self.done and self.error is None:
                run = m.group()
                if self._in_key:
                    self._keybuf.append(run)
                    return ""
                if self.keep_strings and not self._stack:
                    self._strbuf.append(run)
                return escape_text(run)
        return None

    def feed(self, text: str, pos: int = 0) -> tuple[str, int]:
        if self._in_string:  # (checked here: most calls start outside a string)
            run = self.string_run(text, pos)
            if run is not None:
                return run, len(text)
        return self._chars(text, pos)

    def _chars(self, text: str, pos: int) -> tuple[str, int]:
        """The general reader, a character (or string run) at a time."""
        n = len(text)
        out: list[str] = []
        i = pos
        while i < n and not self.done and self.error is None:
            if self._in_string:
                if self._uni is not None:
                    need = 4 - len(self._uni)
                    got = text[i : i + need]
                    self._uni += got
                    i += len(got)
                    if len(self._uni) < 4:
                        break
                    hexs, self._uni = self._uni, None
                    try:
                        cp = int(hexs, 16)
                    except ValueError:
                        self._fail(f"bad \\u escape {hexs!r}")
                        break
                    if 0xD800 <= cp < 0xDC00:
                        out.append(self._flush_hi())
                        self._hi = chr(cp)
                    elif 0xDC00 <= cp < 0xE000 and self._hi is not None:
                        pair = 0x10000 + ((ord(self._hi) - 0xD800) << 10) + (cp - 0xDC00)
                        self._hi = None
                        out.append(self._string_char(chr(pair)))
                    else:
                        out.append(self._flush_hi())
                        if 0xD800 <= cp < 0xE000:
                            out.append(self._lone(chr(cp)))
                        else:
                            out.append(self._string_char(chr(cp)))
                    continue
                if self._esc:
                    c = text[i]
                    i += 1
                    self._esc = False
                    if c == "u":
                        self._uni = ""
                        continue
                    dec = _ESCAPES.get(c)
                    if dec is None:
                        self._fail(f"bad escape \\{c}")
                        break
                    out.append(self._flush_hi())
                    out.append(self._string_char(dec))
                    continue
                m = _STRING_RUN.match(text, i)
                if m:
                    run = m.group()
                    i = m.end()
                    out.append(self._flush_hi())
                    if self._in_key:
                        self._keybuf.append(run)
                    else:
                        if self.keep_strings and not self._stack:
                            self._strbuf.append(run)
                        out.append(escape_text(run))
                    continue
                c = text[i]
                i += 1
                if c == "\\":
                    self._esc = True
                else:  # closing quote
                    out.append(self._close_string())
                continue
            c = text[i]
            if self._tok:
                if c in _NUM_CHARS or c.isalpha():
                    self._tok.append(c)
                    i += 1
                    continue
                out.append(self._finish_token())
                continue  # re-read c in the new state
            if c in _WS:
                # the whole run at once (`+=` per character on an attribute is quadratic)
                j = i + 1
                while j < n and text[j] in _WS:
                    j += 1
                if self.keep_space and self._stack:
                    # blanks inside the value are kept as written (separators included);
                    # after a pending separator or key they wait with it
                    if self._pending:
                        self._pending += text[i:j]
                    else:
                        out.append(text[i:j])
                i = j
                continue
            if not self.first:
                self.first = c
            exp = self._expect
            if exp == "colon":
                if c != ":":
                    self._fail(f"expected ':' but found {c!r}")
                    break
                i += 1
                self._expect = "value"
                continue
            if exp == "comma":
                top = self._stack[-1]
                if c == ",":
                    i += 1
                    self._pending = ","
                    self._expect = "key" if top == "{" else "value"
                    continue
                if (c == "}" and top == "{") or (c == "]" and top == "["):
                    i += 1
                    self._pending = ""
                    out.append(c)
                    self._stack.pop()
                    self._value_done()
                    continue
                self._fail(f"expected ',' or a closing bracket but found {c!r}")
                break
            if exp in ("key", "key1"):
                if c == '"':
                    i += 1
                    self._in_string = True
                    self._in_key = True
                    continue
                if c == "}" and exp == "key1":
                    i += 1
                    out.append("}")
                    self._stack.pop()
                    self._value_done()
                    continue
                self._fail(f"expected an object key but found {c!r}")
                break
            # expecting a value ("value", or "value1": first array element, "]" allowed)
            if c == "]" and exp == "value1":
                i += 1
                out.append("]")
                self._stack.pop()
                self._value_done()
                continue
            pre, self._pending = self._pending, ""
            if c == "{":
                i += 1
                out.append(pre + "{")
                self._stack.append("{")
                self._expect = "key1"
                continue
            if c == "[":
                i += 1
                out.append(pre + "[")
                self._stack.append("[")
                self._expect = "value1"
                continue
            if c == '"':
                i += 1
                out.append(pre + '"')
                self._in_string = True
                if self.keep_strings and not self._stack:
                    self._strbuf.clear()
                continue
            if c in _NUM_CHARS or c.isalpha():
                self._pending = pre  # written with the token once it is complete
                self._tok = [c]
                i += 1
                continue
            self._fail(f"unexpected character {c!r}")
            break
        return "".join(out), i

    def end(self) -> str:
        """End of input: complete a trailing top-level number or literal."""
        if self._tok and not self.done and self.error is None:
            return self._finish_token()
        return ""

    @property
    def started(self) -> bool:
        return bool(self.first)

    @property
    def pending_token(self) -> str:
        """A number or literal read but not yet complete (not yet in the output)."""
        return "".join(self._tok)

    def closers(self) -> str:
        """Text closing the unfinished value so the output so far becomes valid JSON.

        A pending number/literal and a pending key are dropped (they were never written).
        """
        if self.done:
            return ""
        out = '"' if self._in_string and not self._in_key else ""
        tok = "".join(self._tok)
        if tok and (tok in _LITERALS or _NUMBER.match(tok)):
            out = self._pending + tok  # a number cut by the end of output is complete
        return out + "".join("}" if b == "{" else "]" for b in reversed(self._stack))


# A plain integer (the most common typed value) is its own canonical form
_PLAIN_INT = re.compile(r"-?[1-9][0-9]{0,14}|0")


def canonical_json(text: str) -> str | None:
    """Canonical form of the JSON value that is all of `text` (surrounding whitespace ok)."""
    if _PLAIN_INT.fullmatch(text):
        return text
    r = JsonValueReader()
    out, i = r.feed(text)
    out += r.end()
    if r.error is not None or not r.done or text[i:].strip():
        return None
    return out
