"""One exclusive lock per cache folder (build-cache rule 8), an flock on a file in its state folder.

The kernel drops an flock when its holder dies, SIGKILL included, so a lock left by a killed
helper never blocks. The lock file itself stays: it is state, not a temporary file.
"""

from __future__ import annotations

import fcntl
import math
import os
import time
from collections.abc import Callable
from types import TracebackType

from buildtool.cache.entries import NotRegular, open_regular
from buildtool.cache.errors import CacheError
from buildtool.flock import Taken, lock_exclusive
from buildtool.fsutil import replace_file, show

LOCK_NAME = b"lock"


def check_timeout(option: str, seconds: float) -> None:
    """A wait bound must be a finite number of seconds, zero or more (nan would wait forever:
    every comparison with it is false)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise CacheError(f"{option} {seconds!r}: must be a finite number of seconds, 0 or more")


class CacheLock:
    """Context manager: take the lock, waiting up to `timeout` seconds and saying so."""

    def __init__(
        self,
        state_dir: bytes,
        timeout: float,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_timeout("--lock-timeout", timeout)
        self.path = os.path.join(state_dir, LOCK_NAME)
        self.timeout = timeout
        self.say = say
        self.clock = clock
        self.fd = -1

    def _holder(self) -> str:
        try:
            text = os.pread(self.fd, 64, 0).decode("ascii", "replace").strip()
        except OSError:
            return ""
        return f" (held by pid {text})" if text.isdigit() else ""

    def _open(self) -> int:
        """The lock file, a regular file; anything else there (a symlink, which would be
        written through, a FIFO, a folder) is replaced by a fresh file, saying so."""
        for _ in range(5):
            try:
                return open_regular(self.path, os.O_RDWR | os.O_CREAT)
            except NotRegular as odd:
                self.say(f"replacing the lock file {show(self.path)}: it was {odd.what}")
                try:
                    replace_file(self.path, b"", clear_dir=True)
                except OSError as exc:
                    raise CacheError(
                        f"cannot replace lock file {show(self.path)}: {exc.strerror}"
                    ) from exc
            except OSError as exc:
                raise CacheError(
                    f"cannot open lock file {show(self.path)}: {exc.strerror}"
                ) from exc
        raise CacheError(f"lock file {show(self.path)} keeps being replaced; giving up")

    def _is_current(self, fd: int) -> bool:
        """Our descriptor is still the file at the lock path (not replaced while we waited)."""
        try:
            here = os.lstat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def acquire(self) -> None:
        deadline = self.clock() + self.timeout
        while True:
            self.fd = self._open()
            taken = lock_exclusive(
                self.fd,
                lambda: self.say(f"waiting for the cache lock {show(self.path)}{self._holder()}"),
                max(0.0, deadline - self.clock()),
                self.clock,
            )
            if taken is Taken.TIMED_OUT:
                os.close(self.fd)
                self.fd = -1
                raise CacheError(
                    f"timed out after {self.timeout:g} s waiting for the cache lock "
                    f"{show(self.path)}"
                )
            if self._is_current(self.fd):
                break
            # another helper replaced the entry while we waited: lock the one there now
            os.close(self.fd)
            self.fd = -1
        if taken is Taken.AFTER_WAITING:
            self.say("got the cache lock")
        # who holds it, for the next waiter's message
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = -1

    def held_elsewhere(self) -> bool:
        """For read-only callers: is a build holding the lock right now? (does not wait)"""
        try:
            fd = open_regular(self.path, os.O_RDONLY)
        except (OSError, NotRegular):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def __enter__(self) -> CacheLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
