"""Inside the builder stage: build the project's wheel, build folder on the mount.

Run by `buildtool cache-build` (which aligns the workspace mtimes to the stamp first), so
setuptools' mtime-based `build_py` copies exactly the sources that changed since the artifacts in
the build folder were made, and a same-size edit with an old mtime is still copied:
    python3 -B -m buildtool.images.artifact [--sidecar NAME ...] --build-dir DIR --dist-dir DIR
Prints `artifact: building ...` when it builds, which the image tests look for, and checks the
wheel declares the console script of each sidecar named (default: every sidecar).

The wheel holds every sidecar, so one wheel in a cache folder serves all: a run finds it fresh
by make's rule — the wheel is newer than every input. That rule is sound only under the helper:
a changed input moves every input's mtime past the wheel (and the helper waits for that time to
pass before the build, so the new wheel is newer again), an unchanged one puts them back.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

from buildtool.filetree import file_stats
from buildtool.images.targets import SIDECARS

MARKER = "artifact: building"
REUSED = "artifact: reusing"
# Never inputs of the wheel (the helper's --exclude, byte-code, VCS). Anything else counts: an
# extra file can only cause a rebuild, never a stale reuse.
SKIPPED = frozenset({b"wheelhouse", b"__pycache__", b".git"})


class ArtifactError(RuntimeError):
    """The wheel is missing or lacks the sidecar's entry point."""


def build_wheel(workspace: Path, build_dir: Path, dist_dir: Path) -> Path:
    """setuptools `build` (into `build_dir`, kept between builds) then `bdist_wheel`."""
    # Deprecation notices about invoking setuptools commands directly are noise in build logs.
    warnings.simplefilter("ignore")
    import setuptools  # type: ignore[import-untyped]  # late: only builder stages need it

    dist_dir.mkdir(parents=True, exist_ok=True)
    for old in dist_dir.glob("*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="artifact-") as tmp:
        args = [
            "-q",
            "egg_info",
            "--egg-base",
            tmp,
            "build",
            "--build-base",
            str(build_dir),
            "bdist_wheel",
            "--bdist-dir",
            str(Path(tmp) / "bdist"),
            "--dist-dir",
            str(dist_dir),
        ]
        setuptools.setup(script_args=args, script_name=str(workspace / "setup.py"))
    wheels = sorted(dist_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise ArtifactError(f"expected one wheel in {dist_dir}, found {len(wheels)}")
    return wheels[0]


def newest_input_mtime_ns(workspace: Path) -> int:
    root = os.fsencode(workspace)

    def not_input(path: bytes) -> bool:  # skipped folders are entered; their files ignored
        return any(p in SKIPPED or p.endswith(b".pyc") for p in path[len(root) + 1 :].split(b"/"))

    return max((st.st_mtime_ns for st in file_stats([root], ignore=not_input)), default=0)


def fresh_wheel(workspace: Path, dist_dir: Path) -> Path | None:
    """The one wheel in `dist_dir` when it is strictly newer than every input, else None."""
    wheels = sorted(dist_dir.glob("*.whl")) if dist_dir.is_dir() else []
    if len(wheels) != 1:
        return None
    if wheels[0].stat().st_mtime_ns <= newest_input_mtime_ns(workspace):
        return None
    return wheels[0]


def check_entry_point(wheel: Path, sidecar: str) -> None:
    """The image's ENTRYPOINT is `sidecar-NAME`: the wheel must declare that console script."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = zf.read(names[0]).decode() if names else ""
    if f"sidecar-{sidecar} =" not in text and f"sidecar-{sidecar}=" not in text:
        raise ArtifactError(f"{wheel.name} declares no console script `sidecar-{sidecar}`")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -B -m buildtool.images.artifact")
    parser.add_argument(
        "--sidecar",
        action="append",
        choices=SIDECARS,
        help="a sidecar whose console script the wheel must declare (default: every sidecar)",
    )
    parser.add_argument("--build-dir", required=True, type=Path)
    parser.add_argument("--dist-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    workspace = Path.cwd()
    sidecars: list[str] = args.sidecar or list(SIDECARS)
    try:
        wheel = fresh_wheel(workspace, args.dist_dir)
        if wheel is not None:
            print(f"{REUSED} {wheel} (newer than every input)", flush=True)
        else:
            scripts = ", ".join(f"sidecar-{name}" for name in sidecars)
            print(f"{MARKER} the wheel for {scripts} in {args.build_dir}", flush=True)
            wheel = build_wheel(workspace, args.build_dir, args.dist_dir)
        for name in sidecars:
            check_entry_point(wheel, name)
    except (ArtifactError, SystemExit, OSError) as exc:  # OSError: TreeError too
        print(f"artifact: error: {exc}", file=sys.stderr)
        return 1
    print(f"artifact: {wheel}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
