"""`Deadline`: one event-loop timer serving the successive deadlines of one connection.

A connection sets a deadline for each read, request stage or idle spell, and nearly every
one is met. Making an `asyncio` timer and cancelling it each time costs more than some
whole reads, so the timer is moved only when a new deadline comes before it; a met deadline
is just cleared, and the timer lapses. When it fires early (for a deadline since cleared
or pushed back) it looks again and waits for the deadline now due, if any.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

# A deadline counts as reached this close to it (the event loop may run a timer a clock
# tick early).
SLACK = 0.001


class Deadline:
    """Calls `on_due()` once the deadline last `set` passes without a `clear()` since."""

    __slots__ = ("_due", "_loop", "_on_due", "_timer", "_timer_due", "active")

    def __init__(self, loop: asyncio.AbstractEventLoop, on_due: Callable[[], object]) -> None:
        self._loop = loop
        self._on_due = on_due
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due = 0.0  # when the timer fires (if any)
        self._due = 0.0
        self.active = False

    def set(self, seconds: float) -> None:
        """The deadline is `seconds` from now (replacing any earlier or later one)."""
        self.active = True
        due = self._due = self._loop.time() + seconds
        timer = self._timer
        if timer is None or self._timer_due > due:
            if timer is not None:
                timer.cancel()
            self._timer_due = due
            self._timer = self._loop.call_at(due, self._fire)

    def clear(self) -> None:
        """No deadline (the timer, if any, lapses)."""
        self.active = False

    def close(self) -> None:
        """No deadline and no timer: the owner is done (the timer would hold it)."""
        self.active = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if not self.active:
            return
        if self._loop.time() >= self._due - SLACK:
            self.active = False
            self._on_due()
        else:
            self._timer_due = self._due
            self._timer = self._loop.call_at(self._due, self._fire)
