"""Build outputs: their newest mtime (an input to the decision) and clearing derived outputs."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator

from buildtool.cache.errors import CacheError, show
from buildtool.fsutil import remove_path


def file_stats(
    roots: Iterable[bytes],
    skip: frozenset[bytes] = frozenset(),
    ignore: Callable[[bytes], bool] | None = None,
) -> Iterator[os.stat_result]:
    """The stat of every file or symlink under `roots` (absolute), never following links.

    `skip`: absolute directories not to enter. `ignore(abs_path)`: files not to count. A file
    that vanishes meanwhile is left out.
    """
    todo = [r for r in roots if os.path.isdir(r)]
    while todo:
        current = todo.pop()
        try:
            with os.scandir(current) as listing:
                items = list(listing)
        except OSError as exc:
            raise CacheError(f"cannot list folder {show(current)}: {exc.strerror}") from exc
        for item in items:
            path = os.path.join(current, os.fsencode(item.name))
            if item.is_dir(follow_symlinks=False):
                if path not in skip:
                    todo.append(path)
                continue
            if ignore is not None and ignore(path):
                continue
            try:
                yield item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue


def newest_mtime(
    roots: Iterable[bytes],
    skip: frozenset[bytes] = frozenset(),
    ignore: Callable[[bytes], bool] | None = None,
) -> float | None:
    """Newest mtime of the files `file_stats` finds (None: none)."""
    return max((st.st_mtime for st in file_stats(roots, skip, ignore)), default=None)


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
