"""The helper's own errors: each names the path or argument at fault; the CLI exits 2."""

from __future__ import annotations

import os

EXIT_OWN_ERROR = 2


class CacheError(Exception):
    """A failure of the helper itself (not of the build command)."""


def show(path: bytes | str) -> str:
    """A path as text for messages; undecodable bytes are escaped, never dropped."""
    text = os.fsdecode(path) if isinstance(path, bytes) else path
    return repr(text)[1:-1] if not text.isprintable() else text
