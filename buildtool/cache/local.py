"""Local mode (docs/build-cache.md, rule 9): mirror a developer checkout into a copy the tool owns.

The checkout is only read, so its mtimes never change (BuildKit's context transfer and the
developer's own tools keep judging it by real mtimes). The copy gets the checkout's inputs;
its build outputs (whatever the input rules exclude) stay between runs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from typing import Any

from buildtool.cache.digest import KIND_SYMLINK, Entry, hasher_factory
from buildtool.cache.errors import CacheError
from buildtool.fsutil import ensure_dir, remove_path, replace_file, replace_symlink, show

WORKTREE_NAME = b"worktree"


def _make_parent(copy_root: bytes, rel: bytes) -> None:
    parent = rel.rpartition(b"/")[0]
    if not parent:
        return
    # one folder at a time: a non-directory where the checkout now has a directory (a file
    # replaced by a folder) is removed on the way down
    prefix = copy_root
    for part in parent.split(b"/"):
        prefix = os.path.join(prefix, part)
        ensure_dir(prefix)


def _copy_file(src: bytes, dst: bytes, expected: bytes, factory: Callable[..., Any]) -> None:
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if factory(data).digest() != expected:
        raise CacheError(f"input changed while syncing the local copy: {show(src)}")
    replace_file(dst, data, mode=mode, clear_dir=True)


def sync(
    checkout: bytes,
    checkout_entries: Sequence[Entry],
    copy_root: bytes,
    copy_entries: Sequence[Entry],
) -> list[bytes]:
    """Make the copy's inputs equal the checkout's; returns the paths written.

    Not shared with `buildtool.images.context.sync` (only the writes are, `buildtool.fsutil`):
    this one applies a plan from two blake3 scans the session needs anyway (stamp, drift),
    re-checks each copied file against its scanned hash, touches only input paths so build
    outputs in the copy survive, and leaves mtimes to `align` (stamp time T). The context sync
    has no scan or stamp: it compares bytes and full mode against the copy itself, mirrors
    everything (empty folders too, strays removed) and gives each rewrite a fresh mtime.

    Both entry lists come from scans with the same input rules. Copies are written to a
    temporary name and renamed (`buildtool.fsutil`), so a kill leaves either old or new bytes
    (and at worst a `.tmp-` file, which is no input and so stays in the copy like an output).
    """
    factory = hasher_factory()
    wanted = {e.path: e for e in checkout_entries}
    try:
        for entry in copy_entries:
            if entry.path not in wanted:
                remove_path(os.path.join(copy_root, entry.path))
        have = {e.path: e for e in copy_entries}
        written: list[bytes] = []
        for entry in checkout_entries:
            old = have.get(entry.path)
            if old is not None and (old.kind, old.content) == (entry.kind, entry.content):
                continue
            _make_parent(copy_root, entry.path)
            dst = os.path.join(copy_root, entry.path)
            if entry.kind == KIND_SYMLINK:
                replace_symlink(dst, entry.content, clear_dir=True)
            else:
                _copy_file(os.path.join(checkout, entry.path), dst, entry.content, factory)
            written.append(entry.path)
    except OSError as exc:
        name = exc.filename if isinstance(exc.filename, bytes | str) else copy_root
        raise CacheError(f"cannot sync the local copy at {show(name)}: {exc.strerror}") from exc
    return written
