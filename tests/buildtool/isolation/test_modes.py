"""Parser modes (the project plugin tests/parser_modes.py) and the marker: session mode
inherited, explicit env wins, documented skips. Also the variant ids, marker merging, the plugin
under pytest-xdist, and the plugin's silence where the marker is not used.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

MODE_TESTS = """
import os
import pytest

@pytest.mark.isolated()
def test_inherits_the_suite_mode():
    assert os.environ.get("DYN_PARSER_VERSION") == "1"

@pytest.mark.isolated(env={"DYN_PARSER_VERSION": "2"})
def test_explicit_env_wins():
    assert os.environ["DYN_PARSER_VERSION"] == "2"

@pytest.mark.isolated(env={"DYN_PARSER_VERSION": None})
def test_explicit_unset_wins():
    assert "DYN_PARSER_VERSION" not in os.environ

@pytest.mark.parser_mode_independent(reason="pure arithmetic, no parser involved")
def test_documented_independent():
    assert 1 + 1 == 2

def test_plain_in_process():
    assert os.environ.get("DYN_PARSER_VERSION") == "1"
"""


TESTS_DIR = Path(__file__).parents[2]


@pytest.fixture
def with_parser_modes(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """An inner session loads the project plugin as tests/conftest.py does (its children too);
    the repository root comes first, as in pyproject's `pythonpath`, so test folders named like
    the packages (tests/buildtool/isolation) never shadow them."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(TESTS_DIR.parent), str(TESTS_DIR))))
    return ("-p", "parser_modes")


def _outcomes(rec: pytest.HookRecorder) -> dict[str, str]:
    """test name -> final outcome (a failure or skip in any phase wins over passed)."""
    result: dict[str, str] = {}
    for report in rec.getreports("pytest_runtest_logreport"):
        name = report.nodeid.split("::")[-1]
        if report.outcome != "passed" or name not in result:
            result[name] = report.outcome
    return result


def test_suite_mode_reaches_isolated_tests_unless_their_env_sets_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, with_parser_modes: tuple[str, str]
) -> None:
    monkeypatch.setenv("DYN_PARSER_VERSION", "1")
    pytester.makepyfile(test_inner_modes=MODE_TESTS)
    rec = pytester.inline_run(*with_parser_modes)
    assert set(_outcomes(rec).values()) == {"passed"}
    assert len(_outcomes(rec)) == 5


def test_parser_mode_only_reports_independent_tests_as_skipped_with_reasons(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, with_parser_modes: tuple[str, str]
) -> None:
    monkeypatch.setenv("DYN_PARSER_VERSION", "1")
    pytester.makepyfile(test_inner_modes=MODE_TESTS)
    result = pytester.runpytest(*with_parser_modes, "--parser-mode-only", "-rs")
    result.assert_outcomes(passed=2, skipped=3)
    result.stdout.fnmatch_lines_random(
        [
            "*SKIPPED*parser-mode independent: pure arithmetic, no parser involved",
            "*SKIPPED*parser-mode independent: its isolated env sets DYN_PARSER_VERSION itself*",
        ]
    )
    result.stdout.fnmatch_lines(["*parser mode: DYN_PARSER_VERSION=1, mode-independent tests*"])


def test_a_mode_independence_claim_needs_a_reason(
    pytester: pytest.Pytester, with_parser_modes: tuple[str, str]
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parser_mode_independent
        def test_x():
            pass
        """
    )
    result = pytester.runpytest(*with_parser_modes, "--parser-mode-only")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*parser_mode_independent needs a reason*"])


def test_variant_ids_are_readable_and_each_variant_is_one_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.isolated(envs={"unset": {"MODE": None}, "v1": {"MODE": "1"}})
        @pytest.mark.parametrize("family", ["hermes", "glm"])
        def test_named(family, isolated_variant, isolated_env):
            assert os.environ.get("MODE") == isolated_env["MODE"]
            assert isolated_variant in ("unset", "v1")

        @pytest.mark.isolated(envs=[{"MODE": "2"}, {"MODE": None, "X": "y"}])
        def test_listed():
            pass
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=6)
    out = result.stdout.str()
    for nodeid in (
        "test_named[hermes-unset]",
        "test_named[hermes-v1]",
        "test_named[glm-v1]",
        "test_listed[MODE=2]",
        "test_listed[MODE=unset-X=y]",
    ):
        assert f"::{nodeid} PASSED" in out


def test_closer_markers_override_farther_ones(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        pytestmark = pytest.mark.isolated(env={"A": "module", "B": "module"})

        @pytest.mark.isolated(env={"B": "class", "C": "class"})
        class TestLayers:
            @pytest.mark.isolated(env={"C": "function"})
            def test_layers(self, isolated_env):
                assert (os.environ["A"], os.environ["B"], os.environ["C"]) == (
                    "module", "class", "function"
                )
                assert isolated_env == {"A": "module", "B": "class", "C": "function"}
        """
    )
    pytester.inline_run().assertoutcome(passed=1)


def test_works_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        ONE, TWO = {"DYN_PARSER_VERSION": "1"}, {"DYN_PARSER_VERSION": "2"}

        @pytest.mark.isolated(envs={"one": ONE, "two": TWO})
        @pytest.mark.parametrize("n", range(3))
        def test_spread(n, isolated_variant):
            expected = {"one": "1", "two": "2"}[isolated_variant]
            assert os.environ["DYN_PARSER_VERSION"] == expected
            assert "PYTEST_XDIST_WORKER" not in os.environ  # the worker's env did not leak
        """
    )
    result = pytester.runpytest_subprocess("-n", "2", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines_random(["*gw0*PASSED*", "*gw1*PASSED*"])


def test_parametrize_helper_with_param_level_marks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        def mode(value):
            return pytest.param(value, marks=pytest.mark.isolated(env={"M": value}), id=f"M{value}")

        @pytest.mark.parametrize("expected", [mode("1"), mode("2")])
        def test_param(expected):
            assert os.environ["M"] == expected
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    assert "::test_param[M1] PASSED" in result.stdout.str()


def test_without_the_project_plugin_nothing_of_parser_modes_is_there(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DYN_PARSER_VERSION", "1")
    pytester.makepyfile(test_inner_modes=MODE_TESTS)
    result = pytester.runpytest("--parser-mode-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # the installed plugin has no such option
    result = pytester.runpytest("-p", "no:warnings")
    # The suite's mode is not inherited without `isolated_inherit`, and no header line.
    result.assert_outcomes(passed=4, failed=1)
    assert "parser mode" not in result.stdout.str()


UNMARKED = """
import os

def test_environment_untouched():
    assert os.environ.get("DYN_PARSER_VERSION") == "1"

def test_fixture_free(request):
    assert "isolated_variant" not in request.fixturenames
"""


def test_a_project_that_never_uses_the_marker_sees_no_behaviour_and_no_machinery(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DYN_PARSER_VERSION", "1")
    pytester.makepyfile(test_plain=UNMARKED)
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('buildtool.isolation.'))\n"
        "    print('LOADED', ' '.join(loaded))\n"
    )
    with_plugin = pytester.runpytest_subprocess("-s")
    without = pytester.runpytest_subprocess("-s", "-p", "no:isolated")
    with_plugin.assert_outcomes(passed=2)
    without.assert_outcomes(passed=2)
    lines = with_plugin.stdout.lines
    header = lines[: lines.index("collected 2 items")]
    assert not [line for line in header if "isolat" in line or "parser mode" in line]
    (loaded,) = [line.split("LOADED", 1)[1] for line in lines if "LOADED" in line]
    # Only the hooks' light modules: no launcher, fork server, verdict or accelerator.
    for heavy in ("parent", "launch", "forkserver", "verdict", "snapshot", "fixture_scan"):
        assert f"buildtool.isolation.{heavy}" not in loaded.split()
    assert "isolated:" not in with_plugin.stdout.str()
