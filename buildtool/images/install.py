"""Inside a builder stage: install the sidecar's wheel into an image tree, incrementally.

    python3 -B -m buildtool.images.install --wheel-dir DIR --tree DIR --out /out [--drop PKG]

`pip install --root /out WHEEL` redid the whole install and byte-compiled every module on each
rebuild, about 0.8 s of CPU per builder stage, three times per one-file change. Here the install
tree lives on the cache mount beside the wheel: `installer` (PyPA's reference installer) unpacks
the wheel into a staging folder, only files whose bytes or mode differ replace those in the tree,
strays are removed, and a module is byte-compiled only when its `.pyc` does not match its source.
The `.pyc` files are checked-hash ones (PEP 552): no timestamps in them, and the interpreter
verifies each against its source's hash, so one left behind by a killed build is never trusted.
Then the tree is copied to `--out`, which the runtime target copies into the image.

The tree mirrors the filesystem root (`opt/venv/lib/python3.X/site-packages/...`,
`opt/venv/bin/sidecar-vllm`); the paths come from the running interpreter, the image's venv.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import py_compile
import shutil
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from buildtool import fsutil

PYC_HEADER = 16  # magic, flags, then the 8-byte source hash (PEP 552)
CHECKED_HASH_FLAGS = 0b11  # hash-based, check the source


class InstallError(RuntimeError):
    """No single wheel to install, or the wheel could not be installed."""


@dataclass(frozen=True)
class InstallResult:
    written: int
    removed: int
    compiled: int
    unchanged: int


def find_wheel(wheel_dir: Path) -> Path:
    wheels = sorted(wheel_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise InstallError(f"expected one wheel in {wheel_dir}, found {len(wheels)}")
    return wheels[0]


def unpack(wheel: Path, staging: Path) -> None:
    """Install `wheel` for the running interpreter, under `staging` as its root (no .pyc)."""
    try:
        from installer import install  # late: only builder stages need it
        from installer.destinations import SchemeDictionaryDestination
        from installer.sources import WheelFile
        from installer.utils import SCHEME_NAMES
    except ImportError:
        raise InstallError(
            "the Python package 'installer' is not installed (it is in the wheelhouse's "
            "build.txt; on a host: pip install -c constraints.txt installer)"
        ) from None
    paths = dict(sysconfig.get_paths())
    # sysconfig has no `headers` path (bpo-44445); installer's own CLI derives it like this.
    paths["headers"] = os.path.join(paths["include"], "sidecar-forge")
    destination = SchemeDictionaryDestination(
        scheme_dict={name: paths[name] for name in SCHEME_NAMES},
        interpreter=sys.executable,
        script_kind="posix",
        destdir=str(staging),
    )
    try:
        with WheelFile.open(wheel) as source:
            install(source, destination, {"INSTALLER": b"buildtool\n"})
    except Exception as exc:  # installer raises plain exceptions for a bad wheel
        raise InstallError(f"installing {wheel} failed: {exc}") from exc


def _files(root: Path) -> Iterator[Path]:
    """Every non-folder entry under `root`, relative to it."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            yield (Path(folder) / name).relative_to(root)


def _pyc_matches(source: bytes, pyc: Path) -> bool:
    """A checked-hash pyc of this interpreter for exactly these source bytes."""
    try:
        with pyc.open("rb") as handle:
            header = handle.read(PYC_HEADER)
    except OSError:
        return False
    return (
        len(header) == PYC_HEADER
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == CHECKED_HASH_FLAGS
        and header[8:16] == importlib.util.source_hash(source)
    )


def _wanted_pycs(tree: Path, sources: Sequence[Path]) -> dict[Path, Path]:
    """pyc path (relative) -> its source (relative), for the modules under site-packages."""
    purelib = Path(sysconfig.get_paths()["purelib"]).relative_to("/")
    wanted: dict[Path, Path] = {}
    for rel in sources:
        if rel.suffix == ".py" and rel.is_relative_to(purelib):
            pyc = Path(importlib.util.cache_from_source(str(tree / rel)))
            wanted[pyc.relative_to(tree)] = rel
    return wanted


def sync_tree(staging: Path, tree: Path) -> InstallResult:
    """Make `tree` hold exactly `staging`'s files, plus a matching pyc per module."""
    sources = list(_files(staging))
    pycs = _wanted_pycs(tree, sources)
    written = unchanged = removed = compiled = 0
    for rel in sources:
        src, dst = staging / rel, tree / rel
        st = src.lstat()
        if fsutil.same_file(src, st, dst):
            unchanged += 1
            continue
        fsutil.ensure_dir(dst.parent)
        fsutil.replace_file(dst, src.read_bytes(), mode=stat.S_IMODE(st.st_mode), clear_dir=True)
        written += 1
    keep = set(sources) | set(pycs)
    for rel in list(_files(tree)):
        if rel not in keep:
            (tree / rel).unlink()
            removed += 1
    for folder, _, _ in os.walk(tree, topdown=False):
        if Path(folder) != tree and not os.listdir(folder):
            os.rmdir(folder)  # an emptied package folder
    for pyc_rel, src_rel in pycs.items():
        source = tree / src_rel
        if _pyc_matches(source.read_bytes(), tree / pyc_rel):
            continue
        py_compile.compile(
            str(source),
            cfile=str(tree / pyc_rel),
            dfile="/" + str(src_rel),  # the path the module has in the image
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
        compiled += 1
    return InstallResult(written, removed, compiled, unchanged)


def drop_packages(staging: Path, packages: Sequence[str]) -> list[str]:
    """Leave top-level `packages` (and the console scripts that run them) out of an unpacked
    install, and out of its RECORD: the wheel holds the build tool too, which the sidecar never
    imports at run time. Returns the dropped paths, relative to the root."""
    if not packages:
        return []
    purelib = staging / Path(sysconfig.get_paths()["purelib"]).relative_to("/")
    scripts = staging / Path(sysconfig.get_paths()["scripts"]).relative_to("/")
    gone: set[Path] = set()
    for package in packages:
        folder = purelib / package
        if folder.is_dir():
            gone.update(p for p in folder.rglob("*") if not p.is_dir())
            shutil.rmtree(folder)
    for info in purelib.glob("*.dist-info"):
        entry_points = info / "entry_points.txt"
        text = entry_points.read_text() if entry_points.is_file() else ""
        for line in text.splitlines():
            name, sep, target = (part.strip() for part in line.partition("="))
            module = target.split(":", 1)[0].split(".", 1)[0]
            script = scripts / name
            if sep and module in packages and script.is_file():
                gone.add(script)
                script.unlink()
    dropped = {os.path.normpath(g) for g in gone}
    for record in purelib.glob("*.dist-info/RECORD"):
        kept = [
            line
            for line in record.read_text().splitlines()
            if os.path.normpath(purelib / line.split(",", 1)[0]) not in dropped
        ]
        record.write_text("".join(line + "\n" for line in kept))
    return sorted(str(g.relative_to(staging)) for g in gone)


def install_incremental(
    wheel: Path, tree: Path, out: Path, drop: Sequence[str] = ()
) -> InstallResult:
    tree.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="install-") as tmp:
        staging = Path(tmp)
        unpack(wheel, staging)
        drop_packages(staging, drop)
        result = sync_tree(staging, tree)
    shutil.copytree(tree, out, symlinks=True, dirs_exist_ok=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -B -m buildtool.images.install")
    parser.add_argument("--wheel-dir", required=True, type=Path, help="holds exactly one wheel")
    parser.add_argument("--tree", required=True, type=Path, help="install tree kept between builds")
    parser.add_argument("--out", required=True, type=Path, help="where the tree is copied to")
    parser.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="a top-level package of the wheel to leave out (with its console scripts)",
    )
    args = parser.parse_args(argv)
    try:
        wheel = find_wheel(args.wheel_dir)
        result = install_incremental(wheel, args.tree, args.out, tuple(args.drop))
    except (InstallError, OSError, py_compile.PyCompileError) as exc:
        print(f"install: error: {exc}", file=sys.stderr)
        return 1
    print(
        f"install: {wheel.name}: {result.written} written, {result.removed} removed, "
        f"{result.compiled} compiled, {result.unchanged} unchanged -> {args.out}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
