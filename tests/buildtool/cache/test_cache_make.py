"""GNU make, output folder shared by two checkouts: stale without the helper, fixed with it."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cache_support import TWO_HOURS, age_tree, run_helper, write

# scripts/setup-host.sh installs both (Debian's make, gcc and libc6-dev)
pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("gcc") is None,
    reason="GNU make and gcc are not installed (scripts/setup-host.sh installs them)",
)

MAKEFILE = """\
OUT ?= out
$(OUT)/app: $(OUT)/main.o $(OUT)/util.o
\tgcc -o $@ $^
$(OUT)/%.o: src/%.c src/util.h
\t@mkdir -p $(OUT)
\tgcc -c -o $@ $<
"""
UTIL_H = "const char *who(void);\n"
UTIL_C = '#include "util.h"\nconst char *who(void) { return "util"; }\n'
MAIN_C = (
    '#include <stdio.h>\n#include "util.h"\nint main(void) { printf("%s %s\\n", "{}", who()); }\n'
)


def checkout(root: Path, word: str) -> Path:
    write(root / "Makefile", MAKEFILE)
    write(root / "src" / "util.h", UTIL_H)
    write(root / "src" / "util.c", UTIL_C)
    write(root / "src" / "main.c", MAIN_C.replace("{}", word))
    return root


def app_says(out: Path) -> str:
    return subprocess.run([out / "app"], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_make_shared_output_stale_then_fixed(tmp_path: Path) -> None:
    out = tmp_path / "shared-out"
    make = ["make", f"OUT={out}"]
    a = checkout(tmp_path / "a", "AAAA")
    run_helper(a, out, make)
    assert app_says(out) == "AAAA util\n"

    # checkout B: one function body differs (same size), every file two hours old
    b = checkout(tmp_path / "b", "BBBB")
    age_tree(b, time.time() - TWO_HOURS)
    plain = subprocess.run([*make, "-C", str(b)], capture_output=True, text=True, check=True)
    assert "is up to date" in plain.stdout
    assert app_says(out) == "AAAA util\n"  # the problem: make ships A's binary for B

    fixed = run_helper(b, out, make)
    assert "changed (inputs changed)" in fixed.stderr
    assert "gcc -c" in fixed.stdout
    assert app_says(out) == "BBBB util\n"

    # the same bytes again, arriving with old mtimes: nothing is rebuilt
    age_tree(b, time.time() - TWO_HOURS)
    again = run_helper(b, out, make)
    assert "unchanged" in again.stderr
    assert "gcc" not in again.stdout and "is up to date" in again.stdout
    assert subprocess.run([*make, "-C", str(b), "-q"]).returncode == 0
    assert app_says(out) == "BBBB util\n"


def test_make_same_size_edit_in_the_same_second(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "Makefile", "out/v.txt: v.in\n\t@mkdir -p out\n\tcp v.in out/v.txt\n")
    write(ws / "v.in", "one\n")
    run_helper(ws, ws / "out", ["make"])
    built = (ws / "v.in").stat().st_mtime_ns
    # edit within the same second, same size: the mtime does not move
    write(ws / "v.in", "two\n")
    import os

    os.utime(ws / "v.in", ns=(built, built))
    subprocess.run(["make", "-C", str(ws)], capture_output=True, check=True)
    assert (ws / "out" / "v.txt").read_text() == "one\n"  # plain make: stale
    run_helper(ws, ws / "out", ["make"])
    assert (ws / "out" / "v.txt").read_text() == "two\n"


def test_in_tree_make_with_outputs_excluded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "Makefile", "prog: main.o\n\tgcc -o $@ $^\nmain.o: main.c\n\tgcc -c -o $@ $<\n")
    write(ws / "main.c", '#include <stdio.h>\nint main(void) { puts("one"); }\n')
    opts = ("--exclude", "*.o", "--exclude", "prog")
    run_helper(ws, ws / ".stamp", ["make"], *opts)
    say = [str(ws / "prog")]
    assert subprocess.run(say, capture_output=True, text=True).stdout == "one\n"
    write(ws / "main.c", '#include <stdio.h>\nint main(void) { puts("two"); }\n')
    age_tree(ws, time.time() - TWO_HOURS)  # outputs too: a restored cache, an old checkout
    assert (
        "gcc" not in subprocess.run(["make", "-C", str(ws)], capture_output=True, text=True).stdout
    )
    fixed = run_helper(ws, ws / ".stamp", ["make"], *opts)
    assert "gcc -c" in fixed.stdout and "2 inputs hashed" in fixed.stderr
    assert subprocess.run(say, capture_output=True, text=True).stdout == "two\n"
