"""`atomic(body, name)`: the regex `(?>body)` spelled with a lookahead and a back-reference.

CPython's `re` gained atomic groups and possessive quantifiers in 3.11.0 but gave wrong
results for some of them until 3.11.5 (Debian 12, the images' Python, ships 3.11.2). A
lookahead has always been atomic in `re` (it is never re-entered once it holds), so
`(?=(?P<name>body))(?P=name)` matches exactly what `(?>body)` matches, on every release: the
lookahead takes `body`'s first match, the back-reference consumes those same characters, and
backtracking past it never retries `body` another way. The cost is one extra comparison of
the matched text. `name` must be unique in the pattern; the wrapper is one more group there.
"""

from __future__ import annotations


def atomic(body: str, name: str) -> str:
    """`body` as an atomic group whose text is group `name`."""
    return f"(?=(?P<{name}>{body}))(?P={name})"
