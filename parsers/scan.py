"""Text scanning utilities: marker search with hold-back, and the prose quote tracker.

Both work incrementally and never look at text twice, so streaming stays linear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal


class MarkerSet:
    """A set of literal markers: find the next one, and how much of a tail to hold back.

    The hold-back is the longest suffix of the text that is a proper prefix of some marker: it
    may become a marker when the next chunk arrives, everything before it is safe to emit.
    """

    __slots__ = ("_first_re", "_prefixes", "_re", "first_chars", "markers", "maxlen", "pattern")

    def __new__(cls, markers: Iterable[str]) -> MarkerSet:
        # Marker sets are built per request from a few fixed tuples: share them.
        key = tuple(sorted({m for m in markers if m}, key=lambda m: (-len(m), m)))
        found = _CACHE.get(key)
        if found is None:
            found = super().__new__(cls)
            found._setup(key)
            _CACHE[key] = found
        return found

    def __init__(self, markers: Iterable[str]) -> None:
        pass  # built in __new__ (shared instances are immutable)

    def _setup(self, uniq: tuple[str, ...]) -> None:
        self.markers: tuple[str, ...] = uniq
        self.maxlen = max((len(m) for m in uniq), default=0)
        self._prefixes = frozenset(m[:i] for m in uniq for i in range(1, len(m)))
        # Longest alternatives first, so a marker that extends another wins.
        self._re = re.compile("|".join(re.escape(m) for m in uniq)) if uniq else None
        # the alternation itself (never matches when empty): a whole-text walk searches it
        # directly, without a method call per marker
        self.pattern: re.Pattern[str] = self._re if self._re is not None else re.compile("(?!)")
        self.first_chars = "".join(sorted({m[0] for m in uniq}))
        self._first_re = (
            re.compile("[" + "".join(re.escape(c) for c in self.first_chars) + "]")
            if uniq
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.markers)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """The first complete marker at or after `pos`."""
        return self._re.search(text, pos) if self._re is not None else None

    def free(self, text: str) -> bool:
        """No character of `text` can begin a marker: nothing to find, nothing to hold back."""
        return self._first_re is None or self._first_re.search(text) is None

    def match_at(self, text: str, pos: int) -> str | None:
        """The (longest) marker that starts exactly at `pos`, if any."""
        if self._re is None:
            return None
        m = self._re.match(text, pos)
        return m.group() if m else None

    def starts_at(self, text: str, pos: int = 0) -> str | Literal[False] | None:
        """The marker at `pos`; None if `text[pos:]` may still become one; False if not."""
        m = self._re.match(text, pos) if self._re is not None else None
        if m is not None:
            return m.group()
        # (a proper prefix is shorter than the longest marker: never slice the whole rest,
        # which made a scan over many tags quadratic)
        if len(text) - pos >= self.maxlen:
            return False
        return None if text[pos:] in self._prefixes else False

    def is_partial(self, tail: str) -> bool:
        """`tail` is a proper prefix of some marker (could still become one)."""
        return tail in self._prefixes

    def holdback(self, text: str, start: int = 0) -> int:
        """Index from which `text` (from `start` on) could be the beginning of a marker.

        Returns len(text) when nothing needs to be held back.
        """
        n = len(text)
        rx = self._first_re
        if rx is None:
            return n
        m = rx.search(text, max(start, n - self.maxlen + 1))
        while m is not None:
            p = m.start()
            if text[p:] in self._prefixes:
                return p
            m = rx.search(text, p + 1)
        return n


_CACHE: dict[tuple[str, ...], MarkerSet] = {}

_QUOTE_SPECIAL = re.compile(r"[\"'`\n]")


class QuoteTracker:
    """Tracks whether the current position of prose is inside quotes or code (V2 principle 3).

    Recognised: `"..."`, `'...'` (an apostrophe inside or at the end of a word is not a quote:
    `I'm`, `users'`), inline code spans (one or two backticks) and fenced code blocks (three or
    more). Quotes and inline code end at a newline so a stray quote cannot hide a real call
    for the rest of the output; fences run until the closing fence.

    Feed it the text in order with `feed`; ask `quoted(next_char)` before a marker that starts
    with `next_char`. Pending decisions (a `'` whose meaning depends on the next character, a
    backtick run that may continue) are resolved by the next character, so no hold-back is
    needed.
    """

    __slots__ = ("code", "dq", "fence", "prev", "sq", "sq_pending", "ticks")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.dq = False
        self.sq = False
        self.code = False
        self.fence = False
        self.prev = ""  # last character fed ("" at start: counts as a word boundary)
        self.sq_pending = False  # a ' inside '...': closes unless the next char is alphanumeric
        self.ticks = 0  # length of a backtick run not yet ended

    def _resolve(self, nxt: str) -> None:
        if self.sq_pending:
            self.sq_pending = False
            if not nxt.isalnum():
                self.sq = False
        if self.ticks and nxt != "`":
            run, self.ticks = self.ticks, 0
            if self.fence:
                if run >= 3:
                    self.fence = False
            elif self.dq or self.sq:
                pass
            elif run >= 3:
                self.fence = True
                self.code = False
            else:
                self.code = not self.code

    def copy(self) -> QuoteTracker:
        """An independent tracker in the same state (to look ahead without changing this one)."""
        other = QuoteTracker.__new__(QuoteTracker)
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        return other

    def quoted(self, nxt: str) -> bool:
        """Whether a marker starting with `nxt` at the current position is inside quotes/code."""
        self._resolve(nxt)
        return self.dq or self.sq or self.code or self.fence

    def quotes_marker(self, before: str, marker: str) -> bool:
        """Feed the prose `before` a marker; True (the marker fed too, as prose) when the
        marker is inside quotes or code."""
        self.feed(before)
        if self.quoted(marker[0]):
            self.feed(marker)
            return True
        return False

    def feed(self, seg: str) -> None:
        if not seg:
            return
        if self.sq_pending or self.ticks:
            self._resolve(seg[0])
        for m in _QUOTE_SPECIAL.finditer(seg):
            p = m.start()
            c = seg[p]
            if self.ticks and c != "`":
                self._resolve(c)
            if c == "`":
                self.ticks += 1
                if p + 1 < len(seg) and seg[p + 1] != "`":
                    self._resolve(seg[p + 1])
                continue
            if self.fence:
                continue
            if c == "\n":
                self.dq = self.sq = self.code = self.sq_pending = False
                continue
            if self.code:
                continue
            prev = seg[p - 1] if p > 0 else self.prev
            if c == '"':
                if self.dq:
                    self.dq = False
                elif not self.sq and not prev.isalnum():
                    self.dq = True
            else:  # "'"
                if self.sq:
                    if p + 1 < len(seg):
                        if not seg[p + 1].isalnum():
                            self.sq = False
                    else:
                        self.sq_pending = True
                elif not self.dq and not prev.isalnum():
                    self.sq = True
        self.prev = seg[-1]


_BLANK = " \t\r\n"
# Blank characters in a row after which blank chunks are batched (`BlankRuns`)
BLANK_BATCH = 256


class BlankRuns:
    """Batches a long run of blank chunks for a scanner that holds blanks until what follows
    decides (a tag, a header, a value, the end) and looks at all it holds on each feed.

    Fed a few characters at a time, such a scanner made a run of 20,000 blanks cost seconds.
    Past `BLANK_BATCH` blanks in a row, a blank chunk waits until the waiting blanks are as
    many as the run before them, so the scanner sees the run in doubling batches: linear in
    all. Any other chunk takes the waiting blanks with it. Only when blanks reach the
    scanner changes: the text and its order are the same (chunk invariance).
    """

    __slots__ = ("_waiting", "run", "wait")

    def __init__(self) -> None:
        # (attributes, not properties: callers test them on their per-chunk paths)
        self.run = 0  # blank characters passed on in a row
        self.wait: list[str] = []  # blank chunks waiting (non-empty: take everything through)
        self._waiting = 0

    def take(self, text: str) -> str | None:
        """The text to feed the scanner now, or None while `text` (blanks) waits."""
        if not self.wait and text[-1:] not in _BLANK:  # (the usual chunk: not all blank)
            self.run = 0
            return text
        if text and not text.strip(_BLANK):
            if self.run >= BLANK_BATCH:
                self.wait.append(text)
                self._waiting += len(text)
                if self._waiting < self.run:
                    return None
                text = self.flush()
            self.run += len(text)
            return text
        self.run = 0
        return self.flush() + text if self.wait else text

    def flush(self) -> str:
        """The waiting blanks (end of output, or the region ends): fed before anything else."""
        text = "".join(self.wait)
        self.wait.clear()
        self._waiting = 0
        return text

    def reset(self) -> None:
        """A new region: no run so far (nothing may be waiting)."""
        self.run = 0
