"""Replacing and removing files in folders the tool owns, and paths as text for messages (stdlib
only: the cache helper uses it).

Every replacement is written to a temporary name in the destination's own folder and renamed
over it, so a reader (a build, BuildKit's context transfer) or a kill sees the old or the new
entry, never a mix; a failure before the rename removes the temporary again. Shared by the
cache's stamp files and local copy (`buildtool.cache`) and the image build context
(`buildtool.images.context`), which must not import each other's heavier dependencies.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable

# In every temporary's name, so a folder's leftovers from a killed writer can be recognised.
TEMP_MARK = b".tmp-"

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]
Writer = Callable[[int], None]  # writes the new content to the open descriptor it is given


def temp_path(dst: PathArg) -> bytes:
    """A fresh temporary name beside `dst`. Fixed length whatever `dst` is called: a long file
    name plus a suffix could exceed the folder's name limit."""
    name = TEMP_MARK + secrets.token_hex(6).encode()
    return os.path.join(os.path.dirname(os.fsencode(dst)), name)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def is_real_dir(path: PathArg) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def remove_path(path: PathArg) -> None:
    """Remove whatever is at `path` (a folder with its contents); nothing there is fine."""
    if is_real_dir(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def ensure_dir(path: PathArg) -> None:
    """Make `path` a real folder, removing a file or symlink that is in the way."""
    if os.path.lexists(path) and not is_real_dir(path):
        os.unlink(path)
    os.makedirs(path, exist_ok=True)


def same_file(src: PathArg, st: os.stat_result, dst: PathArg) -> bool:
    """`dst` is a regular file with the bytes and permission bits of `src` (whose stat is `st`).
    Byte by byte: size and mtime cannot be trusted where this is asked."""
    try:
        dst_st = os.lstat(dst)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(dst_st.st_mode) or dst_st.st_size != st.st_size:
        return False
    if stat.S_IMODE(dst_st.st_mode) != stat.S_IMODE(st.st_mode):
        return False
    # Not filecmp: it caches verdicts by (size, mtime), the very thing that cannot be trusted here.
    with open(src, "rb") as a, open(dst, "rb") as b:
        while True:
            block_a, block_b = a.read(1 << 16), b.read(1 << 16)
            if block_a != block_b:
                return False
            if not block_a:
                return True


def _publish(temp: bytes, dst: bytes, clear_dir: bool) -> None:
    if clear_dir and is_real_dir(dst):
        shutil.rmtree(dst)
    os.replace(temp, dst)


def replace_file(
    dst: PathArg,
    content: bytes | Writer,
    *,
    mode: int | None = None,
    times_ns: tuple[int, int] | None = None,
    durable: bool = False,
    clear_dir: bool = False,
) -> None:
    """Atomically make `dst` a regular file with `content` (bytes, or a writer to stream it).

    `mode`: permission bits to set exactly (None: 0o644 less the umask). `times_ns`: (atime,
    mtime) to give the new file. `durable`: fsync the file before and its folder after the
    rename. `clear_dir`: a folder at `dst` is removed first (otherwise the rename fails).
    Raises OSError, with no temporary left behind.
    """
    final = os.fsencode(dst)
    temp = temp_path(final)
    try:
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
            0o644 if mode is None else 0o600,
        )
        try:
            if isinstance(content, bytes):
                write_all(fd, content)
            else:
                content(fd)
            if mode is not None:
                os.fchmod(fd, mode)
            if times_ns is not None:
                os.utime(fd, ns=times_ns)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        _publish(temp, final, clear_dir)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if durable:
        dfd = os.open(os.path.dirname(final) or b".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def replace_symlink(dst: PathArg, target: str | bytes, *, clear_dir: bool = False) -> None:
    """Atomically make `dst` a symlink to `target`; see `replace_file` for `clear_dir`."""
    final = os.fsencode(dst)
    temp = temp_path(final)
    try:
        os.symlink(os.fsencode(target), temp)
        _publish(temp, final, clear_dir)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def show(path: bytes | str) -> str:
    """A path as text for messages; undecodable bytes are escaped, never dropped."""
    text = os.fsdecode(path) if isinstance(path, bytes) else path
    return repr(text)[1:-1] if not text.isprintable() else text
