"""A hashing progress bar on stderr, shown only on a terminal and only when hashing is long."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

SHOW_AFTER = 0.5  # seconds: short runs never flash a bar


class HashProgress:
    """Call it with (files, bytes) increments; `close()` when done. No-op unless enabled."""

    def __init__(self, enabled: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = enabled
        self.clock = clock
        self.started = clock()
        self.files = 0
        self.nbytes = 0
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, files: int, nbytes: int) -> None:
        self.files += files
        self.nbytes += nbytes
        if not self.enabled:
            return
        if self._bar is None:
            if self.clock() - self.started < SHOW_AFTER:
                return
            self._start()
            if self._bar is None:
                return
        self._bar.update(self._task, completed=self.nbytes, files=self.files)

    def _start(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TransferSpeedColumn,
            )
        except ImportError:  # rich missing in a bare image: no bar, hashing goes on
            self.enabled = False
            return
        self._bar = Progress(
            TextColumn("hashing inputs"),
            BarColumn(),
            TextColumn("{task.fields[files]} files"),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task("hash", total=None, files=0)
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
