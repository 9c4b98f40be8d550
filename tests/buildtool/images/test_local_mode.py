"""No daemon reachable: `buildtool images build` builds the wheels with the helper's local mode.

Real setuptools builds on a copy of the workspace; the daemon is made unreachable by pointing
DOCKER_HOST at a socket that does not exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from buildtool.images.context import default_local_cache, sync

ROOT = Path(__file__).resolve().parents[3]
EDITED = "parsers/errors.py"


def run_local(ws: Path, cache_home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DOCKER_HOST": f"unix://{cache_home}/no-such-docker.sock",
        "XDG_CACHE_HOME": str(cache_home),
    }
    argv = [sys.executable, "-B", "-m", "buildtool", "images", "build", "vllm"]
    done = subprocess.run(
        [*argv, "--workspace", str(ws)], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def wheel_text(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member).decode()


def test_local_mode_builds_new_bytes_and_leaves_the_checkout_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    sync(ROOT, ws)
    cache_home = tmp_path / "cache"
    first = run_local(ws, cache_home)
    assert "no Docker daemon reachable" in first.stderr and "local mode" in first.stderr
    wheel = (
        default_local_cache(ws, cache_home)
        / "vllm"
        / "dist"
        / "sidecar_forge-0.1.0-py3-none-any.whl"
    )
    assert wheel.is_file()
    assert str(wheel) in first.stdout.replace("\n", "")

    path = ws / EDITED
    text = path.read_text()
    before = path.stat()
    edited = text[:3] + "Z" + text[4:]  # one docstring character: same size
    assert len(edited) == len(text) and edited != text
    path.write_text(edited)
    old = before.st_mtime_ns - 2 * 3600 * 10**9
    os.utime(path, ns=(old, old))
    mtimes = {p: p.stat().st_mtime_ns for p in ws.rglob("*.py")}

    run_local(ws, cache_home)

    assert wheel_text(wheel, EDITED) == edited
    # local mode builds in its own copy: the checkout's mtimes are never rewritten
    assert {p: p.stat().st_mtime_ns for p in ws.rglob("*.py")} == mtimes
