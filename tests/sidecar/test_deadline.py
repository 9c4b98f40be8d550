"""`sidecar.deadline.Deadline` on a real event loop: one timer for successive deadlines."""

from __future__ import annotations

import asyncio

import pytest

from sidecar.deadline import Deadline

pytestmark = pytest.mark.parser_mode_independent(reason="timers only")


def _fired_at(steps: list[tuple[float, str, float]], wait: float) -> tuple[list[float], int]:
    """Run `(at, action, seconds)` steps ('set' or 'clear' at `at` seconds) and return when
    `on_due` was called (seconds from the start) and how many timers the loop holds.

    The lower bounds below are the contract (never early); the upper bounds and the gaps
    between steps leave room for a loaded machine, whose loop may wake a few 100 ms late."""

    async def main() -> tuple[list[float], int]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        fired: list[float] = []
        deadline = Deadline(loop, lambda: fired.append(loop.time() - start))
        for at, action, seconds in steps:
            await asyncio.sleep(max(0.0, start + at - loop.time()))
            deadline.set(seconds) if action == "set" else deadline.clear()
        await asyncio.sleep(max(0.0, start + wait - loop.time()))
        pending = len(loop._scheduled)  # type: ignore[attr-defined]
        deadline.close()
        return fired, pending

    return asyncio.run(main())


def test_a_deadline_fires_once_when_due() -> None:
    fired, _ = _fired_at([(0, "set", 0.1)], 0.8)
    assert len(fired) == 1 and 0.1 - 0.002 <= fired[0] < 0.8


def test_a_cleared_deadline_never_fires() -> None:
    fired, pending = _fired_at([(0, "set", 1.0), (0.05, "clear", 0)], 1.3)
    assert fired == [] and pending == 0  # the lapsed timer is gone too


def test_an_earlier_deadline_moves_the_timer() -> None:
    fired, _ = _fired_at([(0, "set", 5.0), (0.05, "set", 0.1)], 0.9)
    assert len(fired) == 1 and 0.15 - 0.002 <= fired[0] < 0.9


def test_a_later_deadline_is_kept_when_the_early_timer_fires() -> None:
    """The timer set for 0.3 s fires, finds the deadline pushed to 0.55 s and waits on."""
    fired, _ = _fired_at([(0, "set", 0.3), (0.05, "set", 0.5)], 1.2)
    assert len(fired) == 1 and 0.55 - 0.002 <= fired[0] < 1.2


def test_close_cancels_the_timer() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop, lambda: None)
        deadline.set(60)
        deadline.close()
        await asyncio.sleep(0)
        return sum(not handle.cancelled() for handle in loop._scheduled)  # type: ignore[attr-defined]

    assert asyncio.run(main()) == 0
