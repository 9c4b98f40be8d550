"""Entries of the state folder (`CACHE/.buildtool/`) opened without trusting what is there.

A shared cache (a CI cache restored across branches, a folder several users write) may hold a
symlink, a FIFO, a socket, a device or a folder where the helper keeps a regular file. Following
the symlink would write through it (truncating a file outside the cache), opening the FIFO would
wait for a writer forever. So every entry is looked at with `lstat` first and opened with
`O_NOFOLLOW | O_NONBLOCK`, and its kind is checked again on the open descriptor (the entry may
be swapped in between). Anything but a regular file is never read: the callers replace it by
renaming a fresh file over it (a rename replaces the entry itself, never a link's target).
"""

from __future__ import annotations

import errno
import os
import stat

from buildtool.cache.errors import CacheError
from buildtool.fsutil import show

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def kind(mode: int) -> str:
    """What a non-regular entry is, for messages."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def odd_entry(path: bytes) -> str | None:
    """None when `path` is a regular file or absent; else what it is ("a symlink", ...)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheError(f"cannot inspect {show(path)}: {exc.strerror}") from exc
    return None if stat.S_ISREG(st.st_mode) else kind(st.st_mode)


class NotRegular(Exception):
    """The entry is not a regular file; `what` says what it is."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def open_regular(path: bytes, flags: int, mode: int = 0o644) -> int:
    """Open a regular file (creating it when `flags` has O_CREAT) without following a symlink
    or waiting on a FIFO. Raises `NotRegular` for any other kind of entry, `OSError` else."""
    what = odd_entry(path)
    if what is not None:
        raise NotRegular(what)
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENODEV):
            # swapped for a symlink, folder, socket or device since the lstat
            raise NotRegular(odd_entry(path) or "not a regular file") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(kind(st.st_mode))
    return fd


def read_regular(path: bytes, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file (at most `limit`); None when absent. Raises `NotRegular`."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        left = limit
        while left is None or left > 0:
            chunk = os.read(fd, 1 << 16 if left is None else min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            if left is not None:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
