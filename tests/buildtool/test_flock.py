"""The shared exclusive-flock helper: at once, after waiting (said once), or timed out."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from buildtool.flock import Taken, lock_exclusive, try_exclusive


def open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def test_free_lock_is_taken_at_once_without_a_word(tmp_path: Path) -> None:
    said: list[str] = []
    fd = open_lock(tmp_path / "lock")
    try:
        assert lock_exclusive(fd, lambda: said.append("waiting"), timeout=1.0) is Taken.AT_ONCE
        assert said == []
    finally:
        os.close(fd)


def test_held_lock_times_out_after_saying_so_once(tmp_path: Path) -> None:
    holder, waiter = open_lock(tmp_path / "lock"), open_lock(tmp_path / "lock")
    said: list[str] = []
    now = [0.0]
    try:
        assert try_exclusive(holder)
        assert not try_exclusive(waiter)

        def sleep(seconds: float) -> None:
            now[0] += seconds

        taken = lock_exclusive(
            waiter, lambda: said.append("waiting"), 3.0, clock=lambda: now[0], sleep=sleep
        )
        assert taken is Taken.TIMED_OUT and said == ["waiting"] and now[0] >= 3.0
    finally:
        os.close(holder)
        os.close(waiter)


def test_unbounded_wait_gets_the_lock_when_the_holder_lets_go(tmp_path: Path) -> None:
    holder, waiter = open_lock(tmp_path / "lock"), open_lock(tmp_path / "lock")
    said: list[str] = []
    assert try_exclusive(holder)
    release = threading.Timer(0.2, os.close, (holder,))
    release.start()
    try:
        assert lock_exclusive(waiter, lambda: said.append("waiting")) is Taken.AFTER_WAITING
        assert said == ["waiting"]
    finally:
        release.join()
        os.close(waiter)
