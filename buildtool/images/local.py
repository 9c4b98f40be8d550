"""No daemon reachable: build each sidecar's wheel on the host with the helper's local mode.

Local mode syncs the checkout into a copy under the cache folder and builds there, so the
checkout's mtimes are never rewritten (build-cache rule 9); the stamp works exactly as in the image.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from buildtool.images.ui import Reporter

# Not inputs of a sidecar's wheel: tool state, caches, outputs, and what the wheel leaves out.
LOCAL_EXCLUDES: tuple[str, ...] = (
    ".nox/",
    ".venv/",
    "venv/",
    ".reports/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".pytest_cache/",
    ".hypothesis/",
    "node_modules/",
    "wheelhouse/",
    "build/",
    "dist/",
    "*.egg-info/",
    "/tests/",
    "/docs/",
    "/benchmarks/",
    "/.github/",
)


class LocalBuildError(RuntimeError):
    """A local build failed; the message names the sidecar and the exit status."""


def local_argv(workspace: Path, cache_root: Path, sidecar: str) -> list[str]:
    """The helper in local mode, running the same artifact step the Dockerfile runs."""
    cache = cache_root / sidecar
    return [
        sys.executable,
        "-B",
        "-m",
        "buildtool",
        "cache-build",
        "--local",
        "--workspace",
        str(workspace),
        "--cache",
        str(cache),
        *(arg for glob in LOCAL_EXCLUDES for arg in ("--exclude", glob)),
        "--clean-on-removal",
        str(cache / "build"),
        "--",
        sys.executable,
        "-B",
        "-m",
        "buildtool.images.artifact",
        "--sidecar",
        sidecar,
        "--build-dir",
        str(cache / "build"),
        "--dist-dir",
        str(cache / "dist"),
    ]


def build_all(
    workspace: Path, cache_root: Path, sidecars: Sequence[str], report: Reporter
) -> list[Path]:
    wheels: list[Path] = []
    for sidecar in sidecars:
        report.line(f"local build of sidecar-{sidecar} (cache {cache_root / sidecar})")
        done = subprocess.run(
            local_argv(workspace, cache_root, sidecar),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise LocalBuildError(
                f"local build of sidecar-{sidecar} failed with status {done.returncode}:\n"
                f"{(done.stdout + done.stderr).strip()[-2000:]}"
            )
        wheels += sorted((cache_root / sidecar / "dist").glob("*.whl"))
    return wheels
