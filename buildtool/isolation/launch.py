"""Parent side: start a child for one test and wait for it, by fork server or by plain spawn.

`ForkServer` keeps one warm server per environment (see `forkserver`); `spawn_child` starts a
fresh interpreter. Both kill the child's whole process group at the deadline and describe how
it ended as a `ChildExit`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from buildtool.isolation.accelerators import NAMES
from buildtool.isolation.child import ChildRequest
from buildtool.isolation.settings import Launcher
from buildtool.isolation.verdict import ChildExit

SERVER_START_TIMEOUT = 180.0  # a cold warm-up on a loaded 2-core machine can take a while
REPLY_TIMEOUT = 30.0


class IsolationError(RuntimeError):
    """The isolation machinery itself failed (not the test): e.g. a server that stopped."""


class ServerStartError(IsolationError):
    """A fork server could not start; `summary` says why in one line."""

    def __init__(self, summary: str, detail: str = "") -> None:
        super().__init__(f"fork server failed to start: {summary}{detail}")
        self.summary = summary if len(summary) <= 300 else summary[:297] + "..."


def bytecode_cache(fallback: Path) -> Path:
    """This user's bytecode cache for isolated children, kept across runs (pyc files are
    validated against their sources, and written atomically, so sharing is safe); `fallback`
    (the session's temporary directory) when that directory is not safely ours."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return fallback
    path = Path(tempfile.gettempdir()) / f"pytest-isolated-pycache-{getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return fallback
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != getuid() or info.st_mode & 0o022:
        return fallback
    return path


def interpreter_flags(private_pycache: Path) -> list[str]:
    """The parent interpreter's flags that change behaviour, for the interpreters we start.

    A parent that writes no bytecode (-B, PYTHONDONTWRITEBYTECODE) must not get .pyc files in
    its source tree from us either; but recompiling (and assertion-rewriting) every project
    module in every child is the largest cost of a child. So children write their bytecode to
    a private cache outside the source tree instead (pycache_prefix; see `bytecode_cache`).
    """
    flags: list[str] = []
    if sys.flags.dont_write_bytecode and not sys.pycache_prefix:
        flags += ["-X", f"pycache_prefix={private_pycache}"]
    if sys.flags.no_user_site:
        flags.append("-s")
    flags += ["-O"] * sys.flags.optimize
    # sys._xoptions: CPython's documented record of -X options; absent elsewhere, none passed
    for key, value in getattr(sys, "_xoptions", {}).items():
        flags += ["-X", key if value is True else f"{key}={value}"]
    return flags


def _exit_of(returncode: int, timed_out: bool, timeout: float) -> ChildExit:
    if returncode < 0:
        return ChildExit(None, -returncode, timed_out, timeout)
    return ChildExit(returncode, None, timed_out, timeout)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def spawn_child(request: ChildRequest, timeout: float, flags: list[str]) -> ChildExit:
    """A fresh interpreter runs `python -m buildtool.isolation.child REQUEST.json`."""
    request_path = Path(request.report_path).with_name("request.json")
    request_path.write_text(request.to_json(), encoding="utf-8")
    argv = [sys.executable, *flags, "-m", "buildtool.isolation.child"]
    with open(request.output_path, "ab") as out:
        proc = subprocess.Popen(
            [*argv, str(request_path)],
            env=request.env,
            cwd=request.cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        returncode = proc.wait(timeout)
        _kill_group(proc.pid)  # what the test left running does not outlive it
        return _exit_of(returncode, False, timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        return _exit_of(proc.wait(), True, timeout)
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise


class _Lines:
    """Read JSON lines from a pipe with a deadline (the parent is single-threaded too)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._buffer = b""

    def read(self, deadline: float) -> dict[str, Any] | None:
        """The next message; None at end of file; TimeoutError at the deadline."""
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        value = json.loads(line)
        assert isinstance(value, dict)
        return value


@dataclass
class ServerInfo:
    pid: int
    modules: int
    started_in: float


class ForkServer:
    """One warm server process for one environment."""

    def __init__(
        self,
        env: dict[str, str],
        cwd: str,
        log_path: Path,
        project_root: Path,
        preload: list[str],
        flags: list[str],
        snapshot: bool = True,
        accelerators: Sequence[str] = NAMES,
    ) -> None:
        self.env = env
        self._log_path = log_path
        argv = [sys.executable, *flags, "-m", "buildtool.isolation.forkserver"]
        argv += ["--project-root", str(project_root)]
        for name in preload:
            argv += ["--preload", name]
        if not snapshot:
            argv.append("--no-snapshot")
        argv.append(f"--accelerators={','.join(accelerators)}")
        started = time.monotonic()
        with open(log_path, "ab") as log:
            self._proc = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,  # keeps terminal Ctrl-C away; the parent stops it
            )
        assert self._proc.stdout is not None
        self._lines = _Lines(self._proc.stdout)
        try:
            hello = self._lines.read(time.monotonic() + SERVER_START_TIMEOUT)
        except TimeoutError:
            self.close()
            raise ServerStartError(
                f"no answer within {SERVER_START_TIMEOUT:g} s", self._log_tail()
            ) from None
        if hello is None or "error" in hello:
            self.close()
            summary = str(hello["error"]) if hello else "it exited"
            raise ServerStartError(summary, str(hello.get("detail", "")) if hello else "")
        self.info = ServerInfo(int(hello["pid"]), int(hello["modules"]), time.monotonic() - started)

    def _log_tail(self) -> str:
        try:
            text = self._log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""
        return f"\n--- fork server log ({self._log_path}) ---\n{text}" if text.strip() else ""

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def run(self, request: ChildRequest, timeout: float) -> ChildExit:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(request.to_json().encode() + b"\n")
            self._proc.stdin.flush()
            forked = self._lines.read(time.monotonic() + REPLY_TIMEOUT)
        except (BrokenPipeError, TimeoutError):
            self.close()
            raise IsolationError(f"fork server stopped answering{self._log_tail()}") from None
        if forked is None:
            self.close()
            raise IsolationError(f"fork server exited{self._log_tail()}")
        pid = int(forked["pid"])
        timed_out = False
        try:
            try:
                ended = self._lines.read(time.monotonic() + timeout)
            except TimeoutError:
                timed_out = True
                _kill_group(pid)
                ended = self._lines.read(time.monotonic() + REPLY_TIMEOUT)
        except BaseException:
            # Interrupted (Ctrl-C, the parent's own pytest-timeout): stop the child and this
            # server, whose reply is now out of step; the next test starts a fresh one.
            _kill_group(pid)
            self.close()
            raise
        if ended is None:
            self.close()
            raise IsolationError(f"fork server exited while a child ran{self._log_tail()}")
        return _exit_of(os.waitstatus_to_exitcode(int(ended["status"])), timed_out, timeout)

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self._proc.stdin.close()  # EOF: the server returns from its loop and exits
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            _kill_group(self._proc.pid)
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


class Launchers:
    """The parent's launchers: a fork server per environment (the most recent few kept)."""

    def __init__(
        self,
        kind: Launcher,
        workdir: Path,
        project_root: Path,
        preload: list[str],
        max_servers: int,
        snapshot: bool = True,
        on_fallback: Callable[[str], None] | None = None,
        accelerators: Sequence[str] = NAMES,
    ) -> None:
        self.accelerators = tuple(accelerators)
        self.kind = kind
        self.fallback: str | None = None  # why the fork server gave way to spawn, if it did
        self._on_fallback = on_fallback
        self._snapshot = snapshot
        self._workdir = workdir
        self._root = project_root
        self._preload = preload
        self._max = max(1, max_servers)
        self._servers: OrderedDict[tuple[tuple[str, str], ...], ForkServer] = OrderedDict()
        self._flags = interpreter_flags(bytecode_cache(workdir / "pycache"))
        self.started: list[ServerInfo] = []

    def run(self, request: ChildRequest, timeout: float) -> tuple[ChildExit, str]:
        """Run the child; also say how (for messages)."""
        if self.kind == "forkserver":
            try:
                server = self._server(request.env, request.cwd)
            except ServerStartError as exc:
                # Found once per run: whatever stopped this server (a project module pytest
                # itself imports, a preload) stops every other one too; no retry per test.
                self._fall_back(exc.summary)
            else:
                return server.run(request, timeout), f"fork server pid {server.info.pid}"
        how = "spawn" if self.fallback is None else "spawn (the fork server could not start)"
        return spawn_child(request, timeout, self._flags), how

    def _fall_back(self, summary: str) -> None:
        self.kind = "spawn"
        self.fallback = summary
        self.close()
        if self._on_fallback is not None:
            self._on_fallback(summary)

    def _server(self, env: dict[str, str], cwd: str) -> ForkServer:
        key = tuple(sorted(env.items()))
        server = self._servers.get(key)
        if server is not None and server.alive:
            self._servers.move_to_end(key)
            return server
        self._servers.pop(key, None)
        while len(self._servers) >= self._max:
            _, oldest = self._servers.popitem(last=False)
            oldest.close()
        log = self._workdir / f"forkserver-{len(self.started) + 1}.log"
        server = ForkServer(
            env,
            cwd,
            log,
            self._root,
            self._preload,
            self._flags,
            self._snapshot,
            self.accelerators,
        )
        self.started.append(server.info)
        self._servers[key] = server
        return server

    def close(self) -> None:
        while self._servers:
            _, server = self._servers.popitem()
            server.close()
