"""Taking an exclusive flock and saying so when someone else holds it (stdlib only).

Shared by the cache folder's lock (`buildtool.cache.lock`, bounded wait) and the image build
context's lock (`buildtool.images.context`, unbounded wait); each words its own messages.
"""

from __future__ import annotations

import fcntl
import math
import time
from collections.abc import Callable
from enum import Enum


class Taken(Enum):
    AT_ONCE = "at once"
    AFTER_WAITING = "after waiting"
    TIMED_OUT = "timed out"


def try_exclusive(fd: int) -> bool:
    """The exclusive lock if it is free right now."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_exclusive(
    fd: int,
    waiting: Callable[[], None],
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Taken:
    """Take the exclusive flock on `fd`; call `waiting()` once, before waiting, if it is held.

    `timeout=None` waits in the kernel for as long as it takes; a number of seconds polls (a
    blocked flock cannot be given a deadline) and gives up with `Taken.TIMED_OUT`.
    """
    if timeout is not None and not (math.isfinite(timeout) and timeout >= 0):
        raise ValueError(f"lock timeout {timeout!r}: must be finite and not negative")
    if try_exclusive(fd):
        return Taken.AT_ONCE
    waiting()
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return Taken.AFTER_WAITING
    deadline = clock() + timeout
    pause = 0.02
    while not try_exclusive(fd):
        if clock() >= deadline:
            return Taken.TIMED_OUT
        sleep(pause)
        pause = min(pause * 2, 0.5)
    return Taken.AFTER_WAITING
