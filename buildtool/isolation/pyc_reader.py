"""pytest's rewritten-bytecode reader, reading each cached file in one call.

pytest loads the bytecode it cached for an assertion-rewritten module with `marshal.load(file)`,
which pulls the file through one `readinto` call per marshalled object: about 6x slower than
`marshal.loads` of the file's bytes (0.3-0.6 ms per module here). An isolated child imports every
rewritten module afresh: its test module, its conftests and any helper modules pytest rewrites.

`install` gives pytest's rewrite module a `marshal` whose `load` reads the rest of the file and
unmarshals the bytes. pytest only calls it on a file it closes right after, so consuming the rest of
the file changes nothing; the result, and the errors of a truncated or corrupt file, are
`marshal.loads`'s, which are `marshal.load`'s.
"""

from __future__ import annotations

import marshal
from typing import IO, Any


class _WholeFileMarshal:
    """The `marshal` module, with `load` reading its file in one call."""

    @staticmethod
    def load(file: IO[bytes], /) -> Any:
        return marshal.loads(file.read())

    def __getattr__(self, name: str) -> Any:
        return getattr(marshal, name)


def _rewrite_module() -> Any:
    from _pytest.assertion import rewrite

    return rewrite


def install() -> None:
    """Make pytest's rewrite hook read its cached bytecode whole (idempotent)."""
    module = _rewrite_module()
    if module.marshal is marshal:
        module.marshal = _WholeFileMarshal()


def uninstall() -> None:
    """pytest's own reader again (idempotent)."""
    _rewrite_module().marshal = marshal


def installed() -> bool:
    return isinstance(_rewrite_module().marshal, _WholeFileMarshal)
