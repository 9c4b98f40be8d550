"""The builder's artifact step: make's rule for reusing the shared wheel, and a real wheel build
through the helper where the second sidecar reuses what the first built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildtool.images import artifact

ROOT = Path(__file__).resolve().parents[3]


def workspace_with_wheel(tmp_path: Path, input_ns: int, wheel_ns: int) -> tuple[Path, Path]:
    ws, dist = tmp_path / "ws", tmp_path / "dist"
    (ws / "pkg").mkdir(parents=True)
    dist.mkdir()
    for rel in ("pyproject.toml", "pkg/mod.py"):
        (ws / rel).write_text("x\n")
        os.utime(ws / rel, ns=(input_ns, input_ns))
    wheel = dist / "sidecar_forge-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"zip")
    os.utime(wheel, ns=(wheel_ns, wheel_ns))
    return ws, dist


T = 1_700_000_000 * 10**9


def test_a_wheel_newer_than_every_input_is_fresh(tmp_path: Path) -> None:
    ws, dist = workspace_with_wheel(tmp_path, T, T + 1)
    assert artifact.fresh_wheel(ws, dist) == dist / "sidecar_forge-0.1.0-py3-none-any.whl"


@pytest.mark.parametrize("wheel_ns", [T, T - 1])
def test_a_wheel_not_strictly_newer_is_rebuilt(tmp_path: Path, wheel_ns: int) -> None:
    ws, dist = workspace_with_wheel(tmp_path, T, wheel_ns)
    assert artifact.fresh_wheel(ws, dist) is None


def test_one_newer_input_deep_down_makes_it_stale(tmp_path: Path) -> None:
    ws, dist = workspace_with_wheel(tmp_path, T, T + 10)
    deep = ws / "pkg" / "sub" / "deeper" / "new.py"
    deep.parent.mkdir(parents=True)
    deep.write_text("y\n")
    os.utime(deep, ns=(T + 11, T + 11))
    assert artifact.fresh_wheel(ws, dist) is None


def test_wheelhouse_and_bytecode_are_not_inputs(tmp_path: Path) -> None:
    ws, dist = workspace_with_wheel(tmp_path, T, T + 10)
    for rel in ("wheelhouse/x.whl", "pkg/__pycache__/mod.cpython-311.pyc", "pkg/old.pyc"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("z")
        os.utime(ws / rel, ns=(T + 99, T + 99))
    assert artifact.fresh_wheel(ws, dist) is not None


@pytest.mark.parametrize("count", [0, 2])
def test_no_single_wheel_means_build(tmp_path: Path, count: int) -> None:
    ws, dist = workspace_with_wheel(tmp_path, T, T + 10)
    if count == 0:
        next(dist.glob("*.whl")).unlink()
    else:
        (dist / "other-1.0-py3-none-any.whl").write_bytes(b"zip")
    assert artifact.fresh_wheel(ws, dist) is None


def run_builder(ws: Path, cache: Path, sidecar: str) -> str:
    """One builder stage's command, as the Dockerfile runs it, on the host."""
    argv = [sys.executable, "-B", "-m", "buildtool", "cache-build", "--workspace", str(ws)]
    argv += ["--cache", str(cache), "--exclude", "wheelhouse/", "--exclude", "tests/"]
    argv += ["--clean-on-removal", str(cache / "build"), "--"]
    argv += [sys.executable, "-B", "-m", "buildtool.images.artifact", "--sidecar", sidecar]
    argv += ["--build-dir", str(cache / "build"), "--dist-dir", str(cache / "dist")]
    done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_builders_sharing_the_folder_build_once_per_change(tmp_path: Path) -> None:
    """Real setuptools through the helper: vllm builds, sglang reuses; a same-size edit with an
    old mtime makes the next builder build again and the wheel holds the new bytes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (ws / name).write_bytes((ROOT / name).read_bytes())
    for name in ("buildtool", "parsers", "sidecar"):
        shutil.copytree(ROOT / name, ws / name, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"

    assert artifact.MARKER in run_builder(ws, cache, "vllm")
    second = run_builder(ws, cache, "sglang")
    assert artifact.REUSED in second and artifact.MARKER not in second

    edited = ws / "parsers" / "errors.py"
    old = edited.stat()
    text = edited.read_text()
    start = text.index('"""') + 3
    new = text[:start] + "QWERTYUI" + text[start + 8 :]
    edited.write_text(new)
    os.utime(edited, ns=(old.st_atime_ns, old.st_mtime_ns - 7200 * 10**9))
    assert artifact.MARKER in run_builder(ws, cache, "trtllm")
    assert artifact.REUSED in run_builder(ws, cache, "vllm")
    (wheel,) = (cache / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("parsers/errors.py").decode() == new


def _fresh_wheel_declaring(tmp_path: Path, scripts: list[str]) -> tuple[Path, Path]:
    ws, dist = workspace_with_wheel(tmp_path, T, T + 10)
    wheel = next(dist.glob("*.whl"))
    with zipfile.ZipFile(wheel, "w") as zf:
        lines = "".join(f"{s} = sidecar.cli:main\n" for s in scripts)
        zf.writestr("sidecar_forge-0.1.0.dist-info/entry_points.txt", f"[console_scripts]\n{lines}")
    os.utime(wheel, ns=(T + 10, T + 10))
    return ws, dist


def test_without_sidecar_options_every_sidecar_script_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = _fresh_wheel_declaring(tmp_path, ["sidecar-vllm"])
    monkeypatch.chdir(ws)
    argv = ["--build-dir", str(tmp_path / "build"), "--dist-dir", str(dist)]
    assert artifact.main([*argv, "--sidecar", "vllm"]) == 0
    assert artifact.main(argv) == 1
    assert "declares no console script `sidecar-sglang`" in capsys.readouterr().err
    (ws2, dist2) = _fresh_wheel_declaring(
        tmp_path / "all", [f"sidecar-{n}" for n in artifact.SIDECARS]
    )
    monkeypatch.chdir(ws2)
    assert artifact.main(["--build-dir", str(tmp_path / "b2"), "--dist-dir", str(dist2)]) == 0
    assert artifact.REUSED in capsys.readouterr().out
