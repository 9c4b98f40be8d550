"""Seeded randomized scenarios against make, timestamp .pyc and setuptools build_py.

Each sequence has two workspaces (interleaved, as two checkouts or two image builds) sharing
one cache folder. Steps: same-size edits within the same second, reverts to older content
with older mtimes, renames, deletes, adds, executable-bit flips, whole-tree re-checkouts with
old mtimes, and builds killed with SIGKILL at a random moment. After every build step the
cache's outputs are compared with a clean build of the same workspace: 0 stale is the bar.

BUILDTOOL_HARNESS_SEQUENCES (default 200) sets the number of sequences; `nox -s bench` runs
1000 through benchmarks/bench_cache.py. BUILDTOOL_HARNESS_SEED moves the seed base.
Run as a script (`python test_cache_harness.py build KIND BUILD_DIR CACHE`) it is the build
command of the killed steps.
"""

from __future__ import annotations

import contextlib
import importlib._bootstrap_external as bootstrap
import io
import logging
import marshal
import os
import py_compile
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cache_support import config, in_process, kill_helper_after

SEQUENCES = int(os.environ.get("BUILDTOOL_HARNESS_SEQUENCES", "200"))
SEED = int(os.environ.get("BUILDTOOL_HARNESS_SEED", "7100"))
SHARDS = 8
KILL_CHANCE = 0.05
SELF = Path(__file__).resolve()

MAKEFILE = """\
SRCS := $(sort $(wildcard src/*.in))
OUTS := $(patsubst src/%.in,$(OUT)/%.out,$(SRCS))
$(OUT)/all.txt: $(OUTS)
\tcat $^ /dev/null > $@
$(OUT)/%.out: src/%.in
\t@mkdir -p $(OUT)
\t( printf '%s ' $(notdir $<); if [ -x $< ]; then printf 'x '; fi; tr a-z A-Z < $< ) > $@
"""
SETUP_PY = 'from setuptools import setup\nsetup(name="demo", packages=["demo"])\n'


# ---------------------------------------------------------------- the three build systems


def build_make(build_dir: Path, out: Path) -> None:
    subprocess.run(["make", "-s", f"OUT={out}"], cwd=build_dir, check=True, capture_output=True)


def read_tree(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def _sources(build_dir: Path, suffix: str) -> list[Path]:
    return sorted(p for p in (build_dir / "src").glob(f"*{suffix}") if p.is_file())


def build_pyc(build_dir: Path, cache: Path) -> None:
    """Timestamp-mode byte code in a pyc folder shared through the cache (a pycache_prefix),
    validated exactly as the import system does before it reuses a .pyc."""
    for source in _sources(build_dir, ".py"):
        cfile = cache / "pyc" / (source.name + "c")
        st = source.stat()
        try:
            data = cfile.read_bytes()
            details = {"name": source.stem, "path": str(source)}
            bootstrap._classify_pyc(data, source.stem, details)  # type: ignore[attr-defined]
            bootstrap._validate_timestamp_pyc(  # type: ignore[attr-defined]
                data, int(st.st_mtime), st.st_size, source.stem, details
            )
            continue  # the loader would use this .pyc
        except (OSError, ImportError, EOFError):
            pass
        cfile.parent.mkdir(parents=True, exist_ok=True)
        py_compile.compile(
            str(source),
            cfile=str(cfile),
            dfile=source.name,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
        )


def pyc_values(build_dir: Path, cache: Path) -> dict[str, object]:
    values = {}
    for source in _sources(build_dir, ".py"):
        data = (cache / "pyc" / (source.name + "c")).read_bytes()
        space: dict[str, object] = {}
        exec(marshal.loads(data[16:]), space)
        values[source.name] = space["VALUE"]
    return values


def clean_pyc_values(build_dir: Path) -> dict[str, object]:
    values = {}
    for source in _sources(build_dir, ".py"):
        space: dict[str, object] = {}
        exec(compile(source.read_bytes(), source.name, "exec"), space)
        values[source.name] = space["VALUE"]
    return values


def build_setuptools(build_dir: Path, lib: Path) -> None:
    from setuptools import Distribution

    # distutils remembers the folders it made, per process (a fresh process would not);
    # it may be loaded twice, as distutils and as setuptools._distutils
    for name in ("distutils.dir_util", "setuptools._distutils.dir_util"):
        module = sys.modules.get(name)
        if module is not None:
            module.SkipRepeatAbsolutePaths.clear()
    quiet = contextlib.redirect_stdout(io.StringIO())
    # build_py warns that byte-compiling is off (PYTHONDONTWRITEBYTECODE); not our concern
    logging.disable(logging.WARNING)
    with contextlib.chdir(build_dir), quiet:
        dist = Distribution({"name": "demo", "package_dir": {"demo": "src"}, "packages": ["demo"]})
        dist.script_name = "setup.py"
        dist.verbose = 0
        command = dist.get_command_obj("build_py")
        command.build_lib = str(lib)  # type: ignore[attr-defined]
        command.compile = 0  # type: ignore[attr-defined]
        command.optimize = 0  # type: ignore[attr-defined]
        try:
            dist.run_command("build_py")
        finally:
            logging.disable(logging.NOTSET)


# ------------------------------------------------------------------------ the scenarios


@dataclass
class Workspace:
    root: Path
    files: dict[str, bytes] = field(default_factory=dict)
    history: dict[str, list[bytes]] = field(default_factory=dict)

    def put(self, name: str, data: bytes, mtime: float | None = None) -> None:
        path = self.root / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        self.files[name] = data
        self.history.setdefault(name, []).append(data)


@dataclass
class Kind:
    name: str
    suffix: str
    build: Callable[[Path, Path], None]
    content: Callable[[random.Random, int], bytes]


def _word(rng: random.Random, size: int) -> str:
    return "".join(rng.choice("abcdefgh") for _ in range(size))


def _make_content(rng: random.Random, size: int) -> bytes:
    return (_word(rng, size) + "\n").encode()


def _py_content(rng: random.Random, size: int) -> bytes:
    return f'VALUE = "{_word(rng, size)}"\n'.encode()


KINDS = {
    "make": Kind("make", ".in", lambda d, c: build_make(d, c / "out"), _make_content),
    "pyc": Kind("pyc", ".py", build_pyc, _py_content),
    "setuptools": Kind(
        "setuptools", ".py", lambda d, c: build_setuptools(d, c / "lib"), _py_content
    ),
}


def outputs(kind: Kind, build_dir: Path, cache: Path) -> object:
    if kind.name == "make":
        return read_tree(cache / "out")
    if kind.name == "pyc":
        return pyc_values(build_dir, cache)
    return read_tree(cache / "lib")


def clean_outputs(kind: Kind, build_dir: Path, scratch: Path) -> object:
    if kind.name == "pyc":
        return clean_pyc_values(build_dir)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    kind.build(build_dir, scratch)
    return read_tree(scratch / ("out" if kind.name == "make" else "lib"))


def new_workspace(root: Path, kind: Kind, rng: random.Random) -> Workspace:
    ws = Workspace(root)
    root.mkdir(parents=True)
    if kind.name == "make":
        (root / "Makefile").write_text(MAKEFILE)
    elif kind.name == "setuptools":
        (root / "setup.py").write_text(SETUP_PY)
        ws.put("__init__.py", b"")
    old = time.time() - rng.randrange(3600, 90000)
    for index in range(rng.randrange(1, 4)):
        ws.put(f"m{index}{kind.suffix}", kind.content(rng, rng.randrange(2, 6)), old)
    return ws


def mutate(ws: Workspace, kind: Kind, rng: random.Random) -> str:
    """Change the workspace the way checkouts, editors and COPY do; returns the step name."""
    names = sorted(n for n in ws.files if n != "__init__.py")
    src = ws.root / "src"
    op = rng.choice(
        [
            "same-size-same-second",
            "revert",
            "rename",
            "delete",
            "add",
            "chmod",
            "recheckout",
            "touch-only",
            "nothing",
        ]
    )
    if op == "same-size-same-second" and names:
        name = rng.choice(names)
        before = os.stat(src / name).st_mtime_ns
        old = ws.files[name]
        data = kind.content(rng, len(old) - len(kind.content(rng, 0)))
        ws.put(name, data)
        os.utime(src / name, ns=(before, before))  # the edit landed in the same second
    elif op == "revert" and names:
        name = rng.choice(names)
        ws.put(name, rng.choice(ws.history[name]), time.time() - rng.randrange(3600, 90000))
    elif op == "rename" and names:
        name = rng.choice(names)
        new = f"r{rng.randrange(100)}{kind.suffix}"
        if new not in ws.files:
            os.rename(src / name, src / new)
            ws.files[new] = ws.files.pop(name)
            ws.history.setdefault(new, []).append(ws.files[new])
    elif op == "delete" and len(names) > 1:
        name = rng.choice(names)
        os.unlink(src / name)
        del ws.files[name]
    elif op == "add":
        name = f"a{rng.randrange(100)}{kind.suffix}"
        ws.put(name, kind.content(rng, rng.randrange(2, 6)), time.time() - rng.randrange(0, 90000))
    elif op == "chmod" and names:
        path = src / rng.choice(names)
        os.chmod(path, path.stat().st_mode ^ 0o111)
    elif op == "recheckout":
        old = time.time() - rng.randrange(3600, 90000)
        for path in src.iterdir():
            os.utime(path, (old, old))
    elif op == "touch-only" and names:
        os.utime(src / rng.choice(names))
    else:
        op = "nothing"
    return op


def _mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.lstat().st_mtime_ns for p in root.rglob("*")}


def killed_build(ws: Path, cache: Path, kind: Kind, options: list[str], rng: random.Random) -> None:
    command = [sys.executable, "-B", str(SELF), "build", kind.name, ".", str(cache)]
    # helper start-up is about 0.25 s of it
    kill_helper_after(rng.uniform(0.1, 0.5), ws, cache, command, *options)


def run_sequence(seed: int, base: Path) -> list[str]:
    """One scenario; returns a log. Raises AssertionError on the first stale output."""
    rng = random.Random(seed)
    kind = KINDS[rng.choices(["make", "pyc", "setuptools"], weights=[45, 40, 15])[0]]
    cache = base / "cache"
    spaces = [new_workspace(base / name, kind, rng) for name in ("a", "b")]
    clean_dir = {"make": cache / "out", "setuptools": cache / "lib"}.get(kind.name)
    options = ["--exclude", "*.egg-info"]
    if clean_dir is not None:
        options += ["--clean-on-removal", str(clean_dir)]
    local = rng.random() < 0.2  # developer mode: build in a synced copy, checkout untouched
    if local:
        options.append("--local")
    log = [f"seed {seed} {kind.name}{' local' if local else ''}"]
    last: int | None = None  # the workspace the previous completed build ran on
    for step in range(rng.randrange(3, 7)):
        index = 0 if rng.random() < 0.6 else 1
        ws = spaces[index]
        op = mutate(ws, kind, rng)
        if rng.random() < KILL_CHANCE:
            killed_build(ws.root, cache, kind, options, rng)
            log.append(f"{step}: ws{index} {op} + killed build")
            last = None
            op = "resume"
        settings = config(
            ws.root,
            cache,
            excludes=("*.egg-info",),
            clean_on_removal=(os.fsencode(clean_dir),) if clean_dir else (),
            local=local,
        )
        checkout_before = _mtimes(ws.root)
        outcome = in_process(
            settings, lambda d: kind.build(Path(os.fsdecode(d)), cache), say=log.append
        )
        log.append(f"{step}: ws{index} {op} -> {outcome.decision.reason}")
        if last == index and op in ("nothing", "recheckout", "touch-only"):
            # same bytes as the last build: reuse, never a needless rebuild (rule 5)
            assert not outcome.decision.changed, "\n".join(log)
        last = index
        if local:
            assert _mtimes(ws.root) == checkout_before, "\n".join(log)
        got = outputs(kind, ws.root, cache)
        want = clean_outputs(kind, ws.root, base / "clean")
        assert got == want, "STALE\n" + "\n".join(log) + f"\ngot  {got}\nwant {want}"
    return log


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """tmpfs when there is one: fsync is free there, and the harness checks logic, not disks."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="cache-harness-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_random_sequences_never_stale(shard: int, scratch: Path) -> None:
    tmp_path = scratch
    count = 0
    for number in range(shard, SEQUENCES, SHARDS):
        run_sequence(SEED + number, tmp_path / f"s{number}")
        shutil.rmtree(tmp_path / f"s{number}")
        count += 1
    assert count == len(range(shard, SEQUENCES, SHARDS))


def _main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "build":
        KINDS[argv[1]].build(Path(argv[2]).resolve(), Path(argv[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
