"""Local mode (spec rule 9): mirror a developer checkout into a copy the tool owns.

The checkout is only read, so its mtimes never change (BuildKit's context transfer and the
developer's own tools keep judging it by real mtimes). The copy gets the checkout's inputs;
its build outputs (whatever the input rules exclude) stay between runs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Sequence
from typing import Any

from buildtool.cache.digest import KIND_SYMLINK, Entry, hasher_factory
from buildtool.cache.errors import CacheError, show

WORKTREE_NAME = b"worktree"
_SYNC_TEMP = b".buildtool-sync-"


def _remove(path: bytes) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _make_parent(copy_root: bytes, rel: bytes) -> None:
    parent = rel.rpartition(b"/")[0]
    if not parent:
        return
    # a non-directory where the checkout now has a directory (file replaced by a folder)
    prefix = copy_root
    for part in parent.split(b"/"):
        prefix = os.path.join(prefix, part)
        if os.path.lexists(prefix) and not (os.path.isdir(prefix) and not os.path.islink(prefix)):
            os.unlink(prefix)
    os.makedirs(os.path.join(copy_root, parent), exist_ok=True)


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
    temp = os.path.join(os.path.dirname(dst), _SYNC_TEMP + secrets.token_hex(6).encode())
    out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        os.fchmod(out, mode)
    finally:
        os.close(out)
    if os.path.isdir(dst) and not os.path.islink(dst):
        shutil.rmtree(dst)
    os.replace(temp, dst)


def _copy_symlink(target: bytes, dst: bytes) -> None:
    temp = os.path.join(os.path.dirname(dst), _SYNC_TEMP + secrets.token_hex(6).encode())
    os.symlink(target, temp)
    if os.path.isdir(dst) and not os.path.islink(dst):
        shutil.rmtree(dst)
    os.replace(temp, dst)


def sync(
    checkout: bytes,
    checkout_entries: Sequence[Entry],
    copy_root: bytes,
    copy_entries: Sequence[Entry],
) -> list[bytes]:
    """Make the copy's inputs equal the checkout's; returns the paths written.

    Both entry lists come from scans with the same input rules. Copies are written to a
    temporary name and renamed, so a kill leaves either old or new bytes (and at worst a
    temporary file, which the next sync removes as an input the checkout does not have).
    """
    factory = hasher_factory()
    wanted = {e.path: e for e in checkout_entries}
    try:
        for entry in copy_entries:
            if entry.path not in wanted:
                _remove(os.path.join(copy_root, entry.path))
        have = {e.path: e for e in copy_entries}
        written: list[bytes] = []
        for entry in checkout_entries:
            old = have.get(entry.path)
            if old is not None and (old.kind, old.content) == (entry.kind, entry.content):
                continue
            _make_parent(copy_root, entry.path)
            dst = os.path.join(copy_root, entry.path)
            if entry.kind == KIND_SYMLINK:
                _copy_symlink(entry.content, dst)
            else:
                _copy_file(os.path.join(checkout, entry.path), dst, entry.content, factory)
            written.append(entry.path)
    except OSError as exc:
        name = exc.filename if isinstance(exc.filename, bytes | str) else copy_root
        raise CacheError(f"cannot sync the local copy at {show(name)}: {exc.strerror}") from exc
    return written
