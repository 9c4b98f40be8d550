"""Set input mtimes to the stamp time T (build-cache rules 4-5); only inputs that were hashed."""

from __future__ import annotations

import os
from collections.abc import Sequence

from buildtool.cache.digest import Entry
from buildtool.cache.errors import CacheError
from buildtool.fsutil import show

NS = 1_000_000_000


def misaligned(entries: Sequence[Entry], stamp_time: int) -> list[Entry]:
    """Inputs whose mtime is not exactly T (pure)."""
    target = stamp_time * NS
    return [e for e in entries if e.mtime_ns != target]


def align(root: bytes, entries: Sequence[Entry], stamp_time: int) -> int:
    """Give every input of `entries` the mtime T; symlinks themselves, never their targets.

    The access time is kept. Returns how many inputs were changed.
    """
    target = stamp_time * NS
    todo = misaligned(entries, stamp_time)
    for entry in todo:
        path = os.path.join(root, entry.path)
        try:
            os.utime(path, ns=(entry.atime_ns, target), follow_symlinks=False)
        except OSError as exc:
            raise CacheError(f"cannot set the mtime of {show(path)}: {exc.strerror}") from exc
    return len(todo)
