"""`sidecar.asgi.DisconnectWatch`: cancels the watched block when the client leaves, only then.

The HTTP-level behaviour (engine request cancelled, 499 recorded) is covered through real
servers in test_sidecar_http.py; these cases pin the timing corners with an in-memory
ASGI `receive`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sidecar.asgi import DisconnectWatch, Message


class Channel:
    """An ASGI `receive`: `http.disconnect` once `leave()` was called, counting the calls."""

    def __init__(self) -> None:
        self.left = asyncio.Event()
        self.calls = 0

    def leave(self) -> None:
        self.left.set()

    async def receive(self) -> Message:
        self.calls += 1
        await self.left.wait()
        return {"type": "http.disconnect"}


def test_client_gone_before_the_watch_starts_is_noticed_when_it_starts() -> None:
    async def main() -> tuple[bool, bool, float]:
        channel = Channel()
        channel.leave()  # gone before the block even began
        cleaned = False
        started = time.monotonic()
        with DisconnectWatch(channel.receive, delay=0.05) as watch:
            try:
                await asyncio.sleep(10)
            finally:
                cleaned = True
        return watch.gone, cleaned, time.monotonic() - started

    gone, cleaned, seconds = asyncio.run(main())
    assert gone and cleaned
    assert seconds < 5  # cancelled after the delay, not after the 10 s sleep


def test_client_leaving_mid_block_cancels_it() -> None:
    async def main() -> tuple[bool, int]:
        channel = Channel()
        asyncio.get_running_loop().call_later(0.1, channel.leave)
        with DisconnectWatch(channel.receive, delay=0.01) as watch:
            await asyncio.sleep(10)
        task = asyncio.current_task()
        assert task is not None
        return watch.gone, task.cancelling()

    gone, cancelling = asyncio.run(main())
    assert gone
    assert cancelling == 0  # the swallowed cancel is not left counted on the task


def test_a_quick_block_never_starts_a_watcher() -> None:
    async def main() -> tuple[bool, int, Any]:
        channel = Channel()
        with DisconnectWatch(channel.receive, delay=0.5) as watch:
            result = await asyncio.sleep(0.01, "done")
        await asyncio.sleep(0.6)  # past the delay: the timer was cancelled with the block
        return watch.gone, channel.calls, result

    assert asyncio.run(main()) == (False, 0, "done")


def test_other_cancellations_pass_through() -> None:
    async def main() -> bool:
        channel = Channel()
        watch = DisconnectWatch(channel.receive, delay=0.01)

        async def block() -> None:
            with watch:
                await asyncio.sleep(10)

        task = asyncio.create_task(block())
        await asyncio.sleep(0.05)
        task.cancel()  # e.g. server shutdown; the client is still there
        with pytest.raises(asyncio.CancelledError):
            await task
        return watch.gone

    assert asyncio.run(main()) is False


def test_an_unarmed_watch_starts_only_once_armed() -> None:
    """`armed=False` (a request's watch, armed once the engine request is written): no
    watcher before `arm()`, even past the delay; after it, a gone client cancels the block."""

    async def main() -> tuple[int, bool, bool]:
        channel = Channel()
        channel.leave()
        watch = DisconnectWatch(channel.receive, delay=0.01, armed=False)
        watch.arm()  # outside the block: does nothing
        calls_before = -1
        with watch:

            async def later() -> None:
                nonlocal calls_before
                await asyncio.sleep(0.2)
                calls_before = channel.calls  # past the delay, not armed: nothing asked
                watch.arm()

            helper = asyncio.create_task(later())
            await asyncio.sleep(10)
        await helper
        return calls_before, watch.gone, channel.calls > 0

    assert asyncio.run(main()) == (0, True, True)
