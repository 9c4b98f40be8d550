"""The hashing progress bar: on a terminal only, never on a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from cache_support import write

# SHOW_AFTER = 0: the bar appears at once instead of after half a second of hashing
RUN = """
import sys
import buildtool.cache.progress as progress
progress.SHOW_AFTER = 0.0
from buildtool.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run(tmp_path: Path, terminal: bool) -> str:
    ws = tmp_path / "ws"
    for index in range(300):
        write(ws / f"d{index % 30}" / f"f{index}", "x" * index)
    args = ["cache-build", "--workspace", str(ws), "--cache", str(tmp_path / "c"), "--", "true"]
    if not terminal:
        done = subprocess.run(
            [sys.executable, "-B", "-c", RUN, *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0
        return done.stderr
    parent, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-B", "-c", RUN, *args],
        stderr=child,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(parent, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(parent)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_bar_on_a_terminal(tmp_path: Path) -> None:
    seen = run(tmp_path, terminal=True)
    assert "hashing inputs" in seen
    assert "300 inputs hashed" in seen


def test_no_bar_on_a_pipe(tmp_path: Path) -> None:
    seen = run(tmp_path, terminal=False)
    assert "hashing inputs" not in seen
    assert "300 inputs hashed" in seen
