"""Shared helpers for the build-cache tests: run the real helper, set up trees, age files."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from buildtool.cache.config import CacheConfig
from buildtool.cache.session import CacheSession, Outcome

HELPER = (sys.executable, "-B", "-m", "buildtool", "cache-build")
TWO_HOURS = 2 * 3600


def helper_cmd(
    workspace: Path | bytes,
    cache: Path | bytes,
    command: Sequence[str],
    *options: str,
) -> list[str | bytes]:
    return [
        *HELPER,
        "--workspace",
        os.fsencode(workspace),
        "--cache",
        os.fsencode(cache),
        *options,
        "--",
        *command,
    ]


def run_helper(
    workspace: Path | bytes,
    cache: Path | bytes,
    command: Sequence[str],
    *options: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, as a Dockerfile RUN step would call it (`env`: all of it)."""
    done = subprocess.run(
        helper_cmd(workspace, cache, command, *options),
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
        timeout=300,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"helper exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return done


def kill_helper_after(
    seconds: float,
    workspace: Path | bytes,
    cache: Path | bytes,
    command: Sequence[str],
    *options: str,
    env: Mapping[str, str] | None = None,
) -> None:
    """Start the real CLI and SIGKILL it with its build (its whole session) after `seconds`."""
    child = subprocess.Popen(
        helper_cmd(workspace, cache, command, *options),
        env=dict(env) if env is not None else None,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(seconds)
    with contextlib.suppress(ProcessLookupError):  # it may have finished already
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def in_process(
    config: CacheConfig, build: Callable[[bytes], None], say: Callable[[str], None] = print
) -> Outcome:
    """The same session the CLI runs, with an in-process build step (cheap for the harness)."""
    session = CacheSession(config, say)
    with session as outcome:
        build(outcome.build_dir)
        session.finish(completed=True, succeeded=True)
    return outcome


def config(workspace: Path, cache: Path, **overrides: object) -> CacheConfig:
    values: dict[str, object] = {
        "workspace": os.path.realpath(os.fsencode(workspace)),
        "cache": os.path.realpath(os.fsencode(cache)),
        "jobs": 1,
        "wait_for_stamp_time": False,
    }
    values.update(overrides)
    return CacheConfig(**values)  # type: ignore[arg-type]


def write(path: Path, text: str | bytes, mtime: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def age_tree(root: Path, mtime: float) -> None:
    """Give every file and symlink under `root` the same old mtime (a checkout or COPY)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*filenames, *dirnames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or os.path.isfile(path):
                os.utime(path, (mtime, mtime), follow_symlinks=False)


def mtimes(root: Path) -> dict[str, int]:
    """mtime_ns of every entry under `root`, symlinks themselves."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*filenames, *dirnames):
            path = os.path.join(dirpath, name)
            found[os.path.relpath(path, root)] = os.lstat(path).st_mtime_ns
    return found


def leftovers(cache: Path) -> list[str]:
    """Temporary files the helper might have left in its state folder."""
    state = cache / ".buildtool"
    return sorted(n for n in os.listdir(state) if ".tmp-" in n or n == "building")
