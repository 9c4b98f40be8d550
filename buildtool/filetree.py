"""The files under folders: the stat of each, found without following links (stdlib only).

Shared by the cache helper (the newest output mtime) and the image builders (the newest input
mtime), which must not import each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from buildtool.fsutil import show


class TreeError(OSError):
    """A folder under the roots cannot be listed; the message names it."""


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
            raise TreeError(f"cannot list folder {show(current)}: {exc.strerror}") from exc
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
