"""Python builds: timestamp-mode .pyc and a setuptools wheel from a shared build/ folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from cache_support import TWO_HOURS, age_tree, run_helper, write

IMPORT = [sys.executable, "-c", "import mod; print(mod.VALUE)"]


def test_timestamp_pyc_same_size_edit_in_the_same_second(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "mod.py", 'VALUE = "aaaa"\n')
    env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": ""}
    env = {k: v for k, v in os.environ.items() if k not in env}
    first = run_helper(ws, ws / ".stamp", IMPORT, env=env)
    assert first.stdout == "aaaa\n"
    assert any((ws / "__pycache__").iterdir())
    stamp_ns = (ws / "mod.py").stat().st_mtime_ns

    write(ws / "mod.py", 'VALUE = "bbbb"\n')
    os.utime(ws / "mod.py", ns=(stamp_ns, stamp_ns))  # same second, same size
    plain = subprocess.run(IMPORT, cwd=ws, capture_output=True, text=True, env=env)
    assert plain.stdout == "aaaa\n"  # the problem: the old .pyc is served

    fixed = run_helper(ws, ws / ".stamp", IMPORT, env=env)
    assert fixed.stdout == "bbbb\n"
    # __pycache__ is not an input: the byte code written by the build did not change the stamp
    assert "unchanged" in run_helper(ws, ws / ".stamp", IMPORT, env=env).stderr


SETUP_PY = """\
from setuptools import setup
setup(name="demo", version="1.0", package_dir={"": "src"}, packages=["demo"])
"""


def wheel_files(dist: Path) -> dict[str, bytes]:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {
            n: archive.read(n)
            for n in archive.namelist()
            if n.startswith("demo/") and n.endswith(".py")
        }


def build_wheel(ws: Path) -> list[str]:
    shutil.rmtree(ws / "dist", ignore_errors=True)
    return [
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--skip-dependency-check",
        "--outdir",
        str(ws / "dist"),
        ".",
    ]


PY_OPTS = ("--exclude", "*.egg-info", "--exclude", "dist/", "--clean-on-removal", "build")


@pytest.mark.slow
def test_setuptools_wheel_from_shared_build_folder(tmp_path: Path) -> None:
    # One source folder whose contents are replaced by each new context (a Docker COPY), and
    # a build/ folder that persists (a cache mount): build_py copies only "newer" sources.
    ws = tmp_path / "src-tree"
    write(ws / "setup.py", SETUP_PY)
    write(ws / "src" / "demo" / "__init__.py", "")
    write(ws / "src" / "demo" / "a.py", 'VALUE = "one"\n')
    write(ws / "src" / "demo" / "gone.py", "OLD = True\n")
    run_helper(ws, ws / "build", build_wheel(ws), *PY_OPTS)
    assert wheel_files(ws / "dist")["demo/a.py"] == b'VALUE = "one"\n'
    assert "demo/gone.py" in wheel_files(ws / "dist")

    # new context: a.py edited (same size), gone.py deleted, files from an old checkout
    write(ws / "src" / "demo" / "a.py", 'VALUE = "two"\n')
    os.unlink(ws / "src" / "demo" / "gone.py")
    age_tree(ws / "src", time.time() - TWO_HOURS)
    backup = tmp_path / "build-before-plain"
    shutil.copytree(ws / "build", backup, symlinks=True)
    subprocess.run(build_wheel(ws), cwd=ws, capture_output=True, check=True)
    plain = wheel_files(ws / "dist")
    assert plain["demo/a.py"] == b'VALUE = "one"\n'  # stale module shipped
    assert "demo/gone.py" in plain  # deleted module survived in build/lib

    shutil.rmtree(ws / "build")
    shutil.copytree(backup, ws / "build", symlinks=True)  # the cache as the plain build found it
    fixed = run_helper(ws, ws / "build", build_wheel(ws), *PY_OPTS)
    assert "cleared 1 output folder" in fixed.stderr
    files = wheel_files(ws / "dist")
    assert files["demo/a.py"] == b'VALUE = "two"\n'
    assert "demo/gone.py" not in files

    # an edit without a delete: no clearing, build_py recopies because T moved
    write(ws / "src" / "demo" / "a.py", 'VALUE = "tri"\n')
    age_tree(ws / "src", time.time() - TWO_HOURS)
    again = run_helper(ws, ws / "build", build_wheel(ws), *PY_OPTS)
    assert "cleared" not in again.stderr and "changed (inputs changed)" in again.stderr
    assert wheel_files(ws / "dist")["demo/a.py"] == b'VALUE = "tri"\n'

    # same bytes, old mtimes: unchanged, build/lib reused as is
    lib_a = ws / "build" / "lib" / "demo" / "a.py"
    copied = lib_a.stat().st_mtime_ns
    age_tree(ws / "src", time.time() - TWO_HOURS)
    same = run_helper(ws, ws / "build", build_wheel(ws), *PY_OPTS)
    assert "unchanged" in same.stderr
    assert lib_a.stat().st_mtime_ns == copied
    assert wheel_files(ws / "dist")["demo/a.py"] == b'VALUE = "tri"\n'
