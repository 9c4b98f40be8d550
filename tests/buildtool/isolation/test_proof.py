"""Proof that a marked test runs in its own child, under exactly the environment it asks for."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import isolation_probe  # imported by each child itself, under the child's environment
import pytest
from parser_modes import MODE_VARIABLES, PARSER_MODES  # this project's isolated_inherit

from buildtool.isolation.environ import ALLOWED_NAMES, ALLOWED_PREFIXES

pytest_plugins = ["pytester"]
# In-process inner sessions see the already imported plugin package: expected, harmless.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

# v1 -> v2 and v2 -> v1 both occur, in one run, each in a fresh child.
ORDERED = {"v1": PARSER_MODES["v1"], "v2": PARSER_MODES["v2"], "v1-again": PARSER_MODES["v1"]}


@pytest.mark.isolated(envs=ORDERED)
def test_import_time_setting_comes_from_the_child_env(
    isolated_variant: str, isolated_env: dict[str, str | None]
) -> None:
    assert os.getpid() == isolation_probe.IMPORTED_IN_PID  # not inherited from a server
    assert ORDERED[isolated_variant]["DYN_PARSER_VERSION"] == isolation_probe.SEEN_AT_IMPORT
    assert isolated_env == ORDERED[isolated_variant]


@pytest.mark.isolated(env={"DYN_PARSER_VERSION": None, "ISOLATION_EXTRA": "yes"})
def test_child_environment_is_the_allowlist_plus_env() -> None:
    assert "DYN_PARSER_VERSION" not in os.environ
    assert isolation_probe.SEEN_AT_IMPORT is None
    assert os.environ["ISOLATION_EXTRA"] == "yes"
    for name in os.environ:
        allowed = name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)
        # PYTEST_VERSION and PYTEST_CURRENT_TEST are pytest's own, set while it runs
        assert (
            allowed
            or name in MODE_VARIABLES
            or name
            in {
                "ISOLATION_EXTRA",
                "PYTEST_CURRENT_TEST",
                "PYTEST_VERSION",
            }
        ), name


@pytest.mark.isolated(env=PARSER_MODES["v2"])
def test_the_server_never_imported_project_modules() -> None:
    # This module imports no parsers/sidecar code, so a loaded one came from the fork server.
    project = [m for m in sys.modules if m.split(".")[0] in ("parsers", "sidecar")]
    assert project == []
    assert "buildtool.images" not in sys.modules and "buildtool.cache" not in sys.modules


def _environ() -> dict[str, str]:
    # PYTEST_CURRENT_TEST names the phase running now; the in-process inner session resets it.
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


PROBE = """
import os
SEEN_AT_IMPORT = os.environ.get("DYN_PARSER_VERSION")
IMPORTED_IN_PID = os.getpid()
"""

ORDER_TESTS = """
import os
import pytest
import probe

def record(expected):
    assert probe.IMPORTED_IN_PID == os.getpid()
    with open({log!r}, "a") as fh:
        fh.write(f"{{probe.SEEN_AT_IMPORT}} {{os.getpid()}}\\n")
    assert probe.SEEN_AT_IMPORT == expected

@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "1"}})
def test_1_first():
    record("1")

@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "2"}})
def test_2_then_two():
    record("2")

@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "1"}})
def test_3_then_one_again():
    record("1")

def test_4_in_the_parent():
    assert os.environ.get("DYN_PARSER_VERSION") == {parent!r}
"""


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_one_run_sees_1_then_2_then_1_and_parent_environ_is_unchanged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    monkeypatch.setenv("DYN_PARSER_VERSION", "parent-value")
    log = pytester.path / "seen.txt"
    pytester.makepyfile(probe=PROBE)
    pytester.makepyfile(test_order=ORDER_TESTS.format(log=str(log), parent="parent-value"))
    before = _environ()
    result = pytester.inline_run(f"--isolated-launcher={launcher}")
    result.assertoutcome(passed=4)
    assert _environ() == before
    seen = [line.split() for line in log.read_text().splitlines()]
    assert [mode for mode, _ in seen] == ["1", "2", "1"]
    pids = {pid for _, pid in seen}
    assert len(pids) == 3 and str(os.getpid()) not in pids


def test_each_child_imports_project_modules_itself(pytester: pytest.Pytester) -> None:
    """Two tests in one environment share a fork server; the project module is new in each."""
    log = pytester.path / "imports.txt"
    pytester.makepyfile(
        myproject=f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')"
    )
    pytester.makepyfile(
        test_twice="""
        import os
        import pytest

        @pytest.mark.isolated(env={"SAME": "env"})
        @pytest.mark.parametrize("n", [1, 2])
        def test_import(n):
            import myproject
        """
    )
    result = pytester.inline_run("--isolated-launcher=forkserver")
    result.assertoutcome(passed=2)
    pids = Path(log).read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 2
