"""What people see: milestone lines and, on a terminal, one live status line (rich, stderr)."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.markup import escape
from rich.status import Status


class Reporter(Protocol):
    def line(self, message: str) -> None: ...

    def status(self, message: str) -> None: ...

    def progress(self, message: str) -> None:
        """A finished step: its own line where there is no live status (CI logs)."""


class ConsoleReporter:
    """Milestones always; the live status only when stderr is a terminal (CI logs stay short)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self._status: Status | None = None

    def line(self, message: str) -> None:
        # emoji off too: a step such as `echo 'sidecar:x:10001:'` must not print as an emoji
        self.console.print(message, markup=False, emoji=False, soft_wrap=True)

    def progress(self, message: str) -> None:
        # on a terminal the live status shows the running step; elsewhere (CI logs) each
        # finished step is a plain line, so a long build is never silent until the summary
        if not self.console.is_terminal:
            self.line(message)

    def status(self, message: str) -> None:
        if not self.console.is_terminal:
            return
        text = escape(message)  # build step names hold [brackets] that are not rich markup
        if self._status is None:
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def done(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __enter__(self) -> ConsoleReporter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.done()


class ListReporter:
    """Collects messages (tests, and callers that print a summary themselves)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.statuses: list[str] = []
        self.progress_lines: list[str] = []

    def progress(self, message: str) -> None:
        self.progress_lines.append(message)

    def line(self, message: str) -> None:
        self.lines.append(message)

    def status(self, message: str) -> None:
        self.statuses.append(message)
