"""Build outputs: their newest mtime (an input to the decision) and clearing derived outputs."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable

from buildtool.cache.errors import CacheError
from buildtool.filetree import TreeError, file_stats
from buildtool.fsutil import remove_path, show


def newest_mtime(
    roots: Iterable[bytes],
    skip: frozenset[bytes] = frozenset(),
    ignore: Callable[[bytes], bool] | None = None,
) -> float | None:
    """Newest mtime of the files `file_stats` finds (None: none)."""
    try:
        return max((st.st_mtime for st in file_stats(roots, skip, ignore)), default=None)
    except TreeError as exc:
        raise CacheError(str(exc)) from exc


def clear(path: bytes, keep: bytes | None) -> None:
    """Remove what `path` holds; the folder itself stays (it may be a mount point).

    `keep`: an absolute path inside `path` that survives (the helper's own state folder).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CacheError(f"cannot clear {show(path)}: {exc.strerror}") from exc
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return
        for name in os.listdir(path):
            child = os.path.join(path, name)
            if keep is not None and (child == keep or keep.startswith(child + b"/")):
                if child != keep:
                    clear(child, keep)
                continue
            remove_path(child)
    except OSError as exc:
        raise CacheError(f"cannot clear {show(path)}: {exc.strerror}") from exc
