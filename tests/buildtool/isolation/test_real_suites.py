"""Other projects' own test suites, from their sdists, give the same counts isolated as in-process.

Each suite runs twice in a fresh pytest process, as a new user would run it: once as it is (the
plugin is installed but no test uses the marker), once with every test marked isolated by a
conftest hook (`item.add_marker(pytest.mark.isolated())`). The terminal's counts (passed,
failed, skipped, xfailed, subtests...) must be equal, and the second run must really have run
every test in a child. pluggy is the project pytest itself imports: its fork server cannot keep
project modules out, so the run falls back to spawn, saying so once.

Needs PyPI (`pip download --no-binary :all: --no-deps`, pinned versions); the sdists are kept in
a per-user cache directory between runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

MARK_ALL = """

# Added by sidecar-forge's tests/buildtool/isolation/test_real_suites.py: every test isolated.
import os as _isolate_os

import pytest as _isolate_pytest


def pytest_collection_modifyitems(items):
    if _isolate_os.environ.get("ISOLATE_EVERY_TEST") == "1":
        for item in items:
            item.add_marker(_isolate_pytest.mark.isolated())
"""


@dataclass(frozen=True)
class Suite:
    requirement: str
    tests: str  # the suite's test directory, relative to the sdist's root
    path: str  # what goes on PYTHONPATH (the importable package's parent), relative too


SUITES = {
    "h11": Suite("h11==0.16.0", "h11/tests", "."),
    "more-itertools": Suite("more-itertools==11.2.1", "tests", "."),
    "pluggy": Suite("pluggy==1.6.0", "testing", "src"),
}


def _cache() -> Path:
    path = Path(tempfile.gettempdir()) / f"sidecar-forge-sdists-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _sdist(suite: Suite, into: Path) -> Path:
    """Download (once) and unpack the suite's sdist; its root directory."""
    name, version = suite.requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    archive = _cache() / f"{stem}.tar.gz"
    if not archive.exists():
        download = _cache() / f"download-{os.getpid()}"
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "-q"),
                *("--no-binary", ":all:", "--no-deps", "-d", str(download)),
                suite.requirement,
            ],
            check=True,
            timeout=600,
        )
        (downloaded,) = download.iterdir()
        downloaded.rename(archive)
        download.rmdir()
    with tarfile.open(archive) as tar:
        tar.extractall(into, members=_safe_members(tar, archive))
    return into / stem


def _safe_members(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """The sdist's members, refused whole if any is not a plain file or folder inside it.

    `extractall(filter="data")` does this check from Python 3.11.4 only; the project supports
    3.11.2 (Debian 12), so the check is spelled out."""
    members = tar.getmembers()
    for m in members:
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise ValueError(f"{archive}: unsafe member {m.name!r} (type {m.type!r})")
    return members


def _run(root: Path, suite: Suite, isolate: bool) -> tuple[dict[str, int], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DYN_"))}
    env["PYTHONPATH"] = str(root / suite.path)
    env["ISOLATE_EVERY_TEST"] = "1" if isolate else "0"
    argv = [sys.executable, "-m", "pytest", suite.tests, "-p", "no:cacheprovider", "-q"]
    # Passed subtests are counted in the summary line too; `-n 0`: no xdist in either run.
    argv += ["-o", "verbosity_subtests=1", "-n", "0"]
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    output = proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    counts = pytest.RunResult.parse_summary_nouns(lines) if lines else {}
    return counts, output


@pytest.mark.parametrize("name", list(SUITES))
def test_a_real_suite_gives_the_same_counts_isolated(name: str, tmp_path: Path) -> None:
    suite = SUITES[name]
    root = _sdist(suite, tmp_path)
    conftest = root / suite.tests / "conftest.py"
    conftest.write_text((conftest.read_text() if conftest.exists() else "") + MARK_ALL)

    plain, plain_output = _run(root, suite, isolate=False)
    assert plain.get("passed", 0) > 20, plain_output[-3000:]
    assert "in child processes" not in plain_output  # nothing isolated in the plain run

    isolated, output = _run(root, suite, isolate=True)
    assert isolated == plain, output[-6000:]
    ran = re.search(r"isolated: (\d+) tests in child processes", output)
    tests = sum(n for noun, n in plain.items() if noun not in ("subtests", "warnings"))
    assert ran is not None and int(ran.group(1)) == tests, output[-3000:]
    fell_back = output.count("the fork server could not start")
    if name == "pluggy":  # pytest imports pluggy: found once, spawn for the rest of the run
        assert fell_back == 1, output[-3000:]
        assert "imported project modules: ['pluggy'" in output
    else:
        assert fell_back == 0, output[-3000:]
