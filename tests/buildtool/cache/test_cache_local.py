"""Local mode (build-cache rule 9): build in a synced copy, never touch the checkout's mtimes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cache_support import mtimes, run_helper, write

MAKEFILE = "out/all.txt: $(sort $(wildcard src/*))\n\t@mkdir -p out\n\tcat $^ > $@\n"


def checkout(root: Path) -> Path:
    write(root / "Makefile", MAKEFILE, mtime=1_500_000_000)
    write(root / "src" / "a", "alpha\n", mtime=1_500_000_000)
    write(root / "src" / "b", "bravo\n", mtime=1_500_000_000)
    os.symlink("a", root / "src" / "link-to-a")
    write(root / ".git" / "HEAD", "ref\n")
    return root


def copy_of(cache: Path) -> Path:
    return cache / ".buildtool" / "worktree"


def test_local_mode_builds_in_a_copy_and_leaves_the_checkout_alone(tmp_path: Path) -> None:
    ws = checkout(tmp_path / "ws")
    cache = tmp_path / "cache"
    before = mtimes(ws)
    first = run_helper(ws, cache, ["make"], "--local")
    assert "building in" in first.stderr
    copy = copy_of(cache)
    assert (copy / "out" / "all.txt").read_text() == "alpha\nbravo\nalpha\n"
    assert not (ws / "out").exists()
    assert not (copy / ".git").exists()  # VCS metadata is not an input, not copied
    assert os.readlink(copy / "src" / "link-to-a") == "a"
    assert mtimes(ws) == before

    # same-size edit in the checkout, mtime kept (an editor within the same second)
    write(ws / "src" / "a", "ALPHA\n", mtime=1_500_000_000)
    os.rename(ws / "src" / "b", ws / "src" / "c")
    os.chmod(ws / "src" / "c", 0o755)
    before = mtimes(ws)
    second = run_helper(ws, cache, ["make"], "--local")
    assert "changed (inputs changed)" in second.stderr
    assert sorted(os.listdir(copy / "src")) == ["a", "c", "link-to-a"]
    assert os.stat(copy / "src" / "c").st_mode & 0o111
    assert (copy / "out" / "all.txt").read_text() == "ALPHA\nbravo\nALPHA\n"
    assert mtimes(ws) == before

    # nothing changed: the copy's outputs are reused, the checkout still untouched
    third = run_helper(ws, cache, ["make"], "--local")
    assert "unchanged" in third.stderr and "cat" not in third.stdout
    assert mtimes(ws) == before


def test_local_copy_edited_behind_the_helpers_back_is_rebuilt(tmp_path: Path) -> None:
    ws = checkout(tmp_path / "ws")
    cache = tmp_path / "cache"
    run_helper(ws, cache, ["make"], "--local")
    copy = copy_of(cache)
    stamp_ns = (copy / "src" / "a").stat().st_mtime_ns
    write(copy / "src" / "a", "ALPHA\n")  # someone edited the tool-owned copy
    os.utime(copy / "src" / "a", ns=(stamp_ns, stamp_ns))
    again = run_helper(ws, cache, ["make"], "--local")
    assert "changed (previous build was interrupted)" in again.stderr
    assert (copy / "src" / "a").read_text() == "alpha\n"
    assert (copy / "out" / "all.txt").read_text() == "alpha\nbravo\nalpha\n"


def test_local_mode_with_cache_inside_the_checkout(tmp_path: Path) -> None:
    ws = checkout(tmp_path / "ws")
    before = mtimes(ws)
    run_helper(ws, ws / "target", ["make"], "--local")
    assert (ws / "target" / ".buildtool" / "worktree" / "out" / "all.txt").exists()
    after = mtimes(ws)
    assert {k: v for k, v in after.items() if not k.startswith("target")} == before
    dry = subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "buildtool",
            "stamp",
            "--local",
            "--workspace",
            str(ws),
            "--cache",
            str(ws / "target"),
        ],
        capture_output=True,
        text=True,
    )
    assert dry.stdout.startswith("unchanged\n") and "0 to align" in dry.stdout
