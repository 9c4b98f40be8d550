"""One exclusive lock per cache folder (spec rule 8), an flock on a file in its state folder.

The kernel drops an flock when its holder dies, SIGKILL included, so a lock left by a killed
helper never blocks. The lock file itself stays: it is state, not a temporary file.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from types import TracebackType

from buildtool.cache.errors import CacheError, show
from buildtool.flock import Taken, lock_exclusive

LOCK_NAME = b"lock"


class CacheLock:
    """Context manager: take the lock, waiting up to `timeout` seconds and saying so."""

    def __init__(
        self,
        state_dir: bytes,
        timeout: float,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
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

    def acquire(self) -> None:
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise CacheError(f"cannot open lock file {show(self.path)}: {exc.strerror}") from exc
        taken = lock_exclusive(
            self.fd,
            lambda: self.say(f"waiting for the cache lock {show(self.path)}{self._holder()}"),
            self.timeout,
            self.clock,
        )
        if taken is Taken.TIMED_OUT:
            os.close(self.fd)
            self.fd = -1
            raise CacheError(
                f"timed out after {self.timeout:g} s waiting for the cache lock {show(self.path)}"
            )
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
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
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
