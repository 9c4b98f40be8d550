"""A cache that is safe to share: poisoned state entries, commands that cannot run, bad bounds.

A CI cache restored across branches, or a folder several users write, can hold a symlink, a
FIFO or a folder where the helper keeps its own files (`CACHE/.buildtool/{stamp,paths,lock,
building}`, local mode's `worktree`). Each test plants one, with a victim file outside the
cache that must stay byte- and mtime-identical, and runs the real CLI with a time limit, so a
helper that waits on a FIFO fails the test instead of hanging it.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest
from cache_support import HELPER, helper_cmd, leftovers, mtimes, run_helper, write

from buildtool.cache.errors import CacheError
from buildtool.cache.lock import CacheLock
from buildtool.flock import lock_exclusive

NO_HANG_S = 30  # every case here finishes in about a second; a FIFO read would block forever
VICTIM_TEXT = "precious bytes outside the cache\n"
STATE_FILES = ("stamp", "paths", "lock", "building")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "src" / "a.txt", "alpha\n", mtime=1_000_000)
    write(root / "build.sh", '#!/bin/sh\necho built > "$1/out.txt"\n', mtime=1_000_000)
    (root / "build.sh").chmod(0o755)
    return root


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "victim.txt"
    write(path, VICTIM_TEXT, mtime=1_234_567)
    return path


def assert_untouched(victim: Path) -> None:
    assert victim.read_text() == VICTIM_TEXT
    assert victim.stat().st_mtime == 1_234_567
    assert sorted(os.listdir(victim.parent)) == ["victim.txt"]


def run(ws: Path, cache: Path, *options: str, command: tuple[str, ...] = ("true",)) -> str:
    """The real CLI, bounded in time; returns stderr and requires success."""
    done = subprocess.run(
        helper_cmd(ws, cache, list(command), *options),
        capture_output=True,
        text=True,
        timeout=NO_HANG_S,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def plant(entry: Path, kind: str, victim: Path) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    if entry.exists() or entry.is_symlink():
        if entry.is_dir() and not entry.is_symlink():
            entry.rmdir()
        else:
            entry.unlink()
    if kind == "symlink":
        entry.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dir":
        # a folder holding a link to the victim: removing the folder must not follow it
        entry.mkdir()
        (entry / "link").symlink_to(victim)
        (entry / "dirlink").symlink_to(victim.parent)
    else:  # pragma: no cover
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dir"])
@pytest.mark.parametrize("name", STATE_FILES)
def test_odd_state_entry_is_replaced_never_followed_or_waited_on(
    ws: Path, tmp_path: Path, victim: Path, name: str, kind: str
) -> None:
    cache = tmp_path / "cache"
    run(ws, cache)  # a good first build: stamp, paths and lock exist
    stamp_before = (cache / ".buildtool" / "stamp").read_bytes()
    plant(cache / ".buildtool" / name, kind, victim)

    said = run(ws, cache, command=("./build.sh", str(cache)))

    assert_untouched(victim)
    what = {"symlink": "a symlink", "fifo": "a FIFO", "dir": "a directory"}[kind]
    replaced = [line for line in said.splitlines() if "replacing" in line]
    assert len(replaced) == 1, said  # one clear line naming the entry and what it was
    assert f"{cache}/.buildtool/{name}" in replaced[0] and what in replaced[0]
    state = cache / ".buildtool"
    for entry in ("stamp", "lock"):
        assert (state / entry).is_file() and not (state / entry).is_symlink(), entry
    assert leftovers(cache) == []
    assert (cache / "out.txt").read_text() == "built\n"
    if name == "stamp":
        # an untrusted stamp is a full rebuild, never fresh-but-wrong
        assert "changed (no stamp yet)" in said
    elif name == "building":
        assert "changed (previous build was interrupted)" in said
    else:
        # the lock, or the path list (only read after a change; gone reads as "unknown",
        # which clears the derived outputs then): the stamp is still trusted
        assert "unchanged" in said and (state / "stamp").read_bytes() == stamp_before
        assert not (state / "paths").is_symlink() and not (state / "paths").is_dir()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dir"])
def test_first_run_with_poisoned_lock_and_marker(
    ws: Path, tmp_path: Path, victim: Path, kind: str
) -> None:
    cache = tmp_path / "cache"
    plant(cache / ".buildtool" / "lock", kind, victim)
    plant(cache / ".buildtool" / "building", "symlink", victim)
    said = run(ws, cache)
    assert_untouched(victim)
    assert said.count("replacing") == 2, said
    assert str(os.getpid()) not in victim.read_text()


def test_dry_run_does_not_wait_on_fifos(ws: Path, tmp_path: Path, victim: Path) -> None:
    cache = tmp_path / "cache"
    run(ws, cache)
    for name in ("stamp", "paths", "lock"):
        plant(cache / ".buildtool" / name, "fifo", victim)
    done = subprocess.run(
        [*HELPER[:-1], "stamp", "--workspace", str(ws), "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=NO_HANG_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("changed (stamp is not a regular file)")
    assert_untouched(victim)


def test_local_copy_that_is_a_symlink_is_replaced_not_written_through(
    ws: Path, tmp_path: Path, victim: Path
) -> None:
    cache = tmp_path / "cache"
    plant(cache / ".buildtool" / "worktree", "symlink", victim.parent)
    said = run(ws, cache, "--local")
    assert_untouched(victim)
    assert f"replacing {cache}/.buildtool/worktree: it was a symlink" in said
    copy = cache / ".buildtool" / "worktree"
    assert copy.is_dir() and not copy.is_symlink()
    assert (copy / "src" / "a.txt").read_text() == "alpha\n"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("no-such-program-xyz",), "command not found: no-such-program-xyz"),
        (("./missing.sh",), "command not found: ./missing.sh"),
        (("./src/a.txt",), "command not executable: ./src/a.txt"),
        (("./src",), "command not executable (not a regular file): ./src"),
    ],
)
@pytest.mark.parametrize("local", [False, True])
def test_bad_command_is_reported_before_stamp_or_mtimes_change(
    ws: Path, tmp_path: Path, command: tuple[str, ...], message: str, local: bool
) -> None:
    cache = tmp_path / "cache"
    options = ("--local",) if local else ()
    run(ws, cache, *options)
    state = cache / ".buildtool"
    stamp_before = (state / "stamp").read_bytes()
    # an edit: a run that went ahead would publish a new stamp and move every mtime
    write(ws / "src" / "a.txt", "alpha, edited\n", mtime=1_000_000)
    before = mtimes(ws)
    copy_before = mtimes(state / "worktree") if local else {}

    done = subprocess.run(
        helper_cmd(ws, cache, list(command), *options),
        capture_output=True,
        text=True,
        timeout=NO_HANG_S,
    )

    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert (state / "stamp").read_bytes() == stamp_before
    assert mtimes(ws) == before
    if local:
        assert mtimes(state / "worktree") == copy_before
    assert leftovers(cache) == []  # no `building` marker: the next run is not "interrupted"
    again = run(ws, cache, *options)
    assert "changed (inputs changed)" in again


def test_bad_command_on_a_fresh_cache_creates_nothing(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = mtimes(ws)
    done = run_helper(ws, cache, ["no-such-program-xyz"], check=False)
    assert done.returncode == 2 and "command not found: no-such-program-xyz" in done.stderr
    assert not cache.exists()
    assert mtimes(ws) == before


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "-0.5"])
def test_non_finite_or_negative_lock_timeout_is_refused(
    ws: Path, tmp_path: Path, value: str
) -> None:
    cache = tmp_path / "cache"
    done = subprocess.run(
        helper_cmd(ws, cache, ["true"], f"--lock-timeout={value}"),
        capture_output=True,
        text=True,
        timeout=NO_HANG_S,
    )
    assert done.returncode == 2, done.stderr
    assert "--lock-timeout" in done.stderr and "finite number of seconds" in done.stderr
    assert not cache.exists()


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_library_refuses_bad_bounds_too(tmp_path: Path, value: float) -> None:
    with pytest.raises(CacheError, match="finite"):
        CacheLock(os.fsencode(tmp_path), value, print)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(ValueError, match="finite"):
            lock_exclusive(fd, lambda: None, value)
    finally:
        os.close(fd)


def test_zero_timeout_still_takes_a_free_lock(ws: Path, tmp_path: Path) -> None:
    assert "no stamp yet" in run(ws, tmp_path / "cache", "--lock-timeout=0")
    assert "unchanged" in run(ws, tmp_path / "cache", "--lock-timeout=0")
