"""Mutation tests: inner pytest sessions with deliberately broken isolated tests.

Each broken shape must come out as a failure in the parent that names its kind, with the child's
output attached; the control in the same file (same code, without the trigger) passes, so the
failure is caused by what the child did and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# In-process inner sessions see the already imported plugin package: expected, harmless.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

HEADER = "import os, signal, subprocess, sys, time\nimport pytest\n"


def run_inner(
    pytester: pytest.Pytester, body: str, launcher: str = "forkserver", **files: str
) -> pytest.HookRecorder:
    for name, text in files.items():
        pytester.makepyfile(**{name: text})
    pytester.makepyfile(test_inner=HEADER + body)
    return pytester.inline_run(f"--isolated-launcher={launcher}")


def call_report(rec: pytest.HookRecorder, name: str) -> pytest.TestReport:
    reports = [
        r
        for r in rec.getreports("pytest_runtest_logreport")
        if r.nodeid.endswith(f"::{name}") and r.when == "call"
    ]
    assert len(reports) == 1, reports
    return reports[0]


def assert_kind(rec: pytest.HookRecorder, name: str, kind: str, *fragments: str) -> str:
    report = call_report(rec, name)
    assert report.failed
    text = report.longreprtext
    assert f"isolated child did not pass [{kind}]" in text
    assert "--- isolated child output ---" in text
    for fragment in fragments:
        assert fragment in text
    return text


def assert_control_passed(rec: pytest.HookRecorder, name: str = "test_control") -> None:
    assert call_report(rec, name).passed


CONTROL = """
@pytest.mark.isolated(env={"TRIGGER": None})
def test_control():
    assert True
"""


OUTCOMES = """
import unittest

import pytest


@pytest.fixture
def broken_setup():
    raise RuntimeError("fixture could not start")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("fixture could not stop")


def test_passes():
    pass


def test_fails():
    value = 41
    assert value == 42


def test_skips_at_runtime():
    pytest.skip("no backend in this environment")


@pytest.mark.skipif("os.environ.get('TRIGGER') == 'on'", reason="trigger is on")
def test_skipif_in_the_test_environment():
    pass


@pytest.mark.xfail(reason="known parser bug")
def test_xfails():
    assert False


@pytest.mark.xfail(reason="thought broken")
def test_xpasses():
    pass


@pytest.mark.xfail(reason="thought broken, strictly", strict=True)
def test_xpasses_strict():
    pass


def test_xfail_call():
    pytest.xfail("decided at run time")


def test_setup_error(broken_setup):
    pass


def test_teardown_error(broken_teardown):
    pass


def test_subtests(subtests):
    for n in range(3):
        with subtests.test(n=n):
            assert n != 1


class TestUnittest(unittest.TestCase):
    def test_subtests_pass(self):
        for n in range(4):
            with self.subTest(n=n):
                self.assertLess(n, 4)

    def test_a_subtest_fails(self):
        for n in range(2):
            with self.subTest(n=n):
                self.assertEqual(n, 0)
"""

MARK_ALL = """
import os
import pytest

def pytest_collection_modifyitems(items):
    if os.environ.get("ISOLATE_ALL") == "1":
        for item in items:
            item.add_marker(pytest.mark.isolated(env={"TRIGGER": "on"}))
"""


def _outcomes(rec: pytest.HookRecorder) -> list[tuple[str, str, str, bool, bool]]:
    return [
        (
            r.nodeid,
            r.when or "",
            r.outcome,
            hasattr(r, "wasxfail"),
            type(r).__name__ != "TestReport",
        )
        for r in rec.getreports("pytest_runtest_logreport")
    ]


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_every_outcome_is_the_in_process_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    pytester.makeconftest(MARK_ALL)
    pytester.makepyfile(test_inner="import os\n" + OUTCOMES)
    monkeypatch.setenv("TRIGGER", "on")
    in_process = pytester.inline_run(
        "-p", "no:isolated", "-W", "ignore::pytest.PytestUnknownMarkWarning"
    )
    monkeypatch.delenv("TRIGGER")  # the isolated tests get it from their marker
    monkeypatch.setenv("ISOLATE_ALL", "1")
    isolated = pytester.inline_run(f"--isolated-launcher={launcher}")
    assert _outcomes(isolated) == _outcomes(in_process)
    counts = in_process.listoutcomes()
    assert [len(c) for c in isolated.listoutcomes()] == [len(c) for c in counts]
    reports = {
        (r.nodeid.split("::")[-1], r.when): r
        for r in isolated.getreports("pytest_runtest_logreport")
    }
    # Failure text is pytest's own (the child's traceback), never a raw report.
    fails = reports[("test_fails", "call")].longreprtext
    assert "assert 41 == 42" in fails and "isolated child did not pass" not in fails
    assert "fixture could not start" in reports[("test_setup_error", "setup")].longreprtext
    assert "fixture could not stop" in reports[("test_teardown_error", "teardown")].longreprtext
    assert "XPASS(strict)" in reports[("test_xpasses_strict", "call")].longreprtext
    xfailed = reports[("test_xfails", "call")]
    assert xfailed.skipped and "known parser bug" in xfailed.wasxfail
    skipped = reports[("test_skipif_in_the_test_environment", "setup")]
    assert skipped.skipped and "trigger is on" in str(skipped.longrepr)


def test_the_terminal_counts_outcomes_and_subtests_as_in_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(MARK_ALL)
    pytester.makepyfile(test_inner="import os\n" + OUTCOMES)
    monkeypatch.setenv("TRIGGER", "on")
    subtests = ("-o", "verbosity_subtests=1")  # count passed subtests too
    plain = pytester.runpytest(
        *subtests, "-p", "no:isolated", "-W", "ignore::pytest.PytestUnknownMarkWarning"
    )
    monkeypatch.delenv("TRIGGER")
    monkeypatch.setenv("ISOLATE_ALL", "1")
    isolated = pytester.runpytest(*subtests, "-rA")
    summary = pytest.RunResult.parse_summary_nouns
    assert summary(isolated.outlines) == summary(plain.outlines)
    assert summary(plain.outlines)["subtests"] == 7  # "7 subtests passed": 2 + 4 + 1
    text = isolated.stdout.str()
    assert "{'" not in text and "'longrepr':" not in text  # no raw report anywhere


DESELECTING_CONFTEST = """
import os

def pytest_collection_modifyitems(config, items):
    if os.environ.get("TRIGGER") == "deselect":
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
"""


def test_deselected_in_the_child(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(DESELECTING_CONFTEST)
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated(env={"TRIGGER": "deselect"})
def test_broken():
    pass
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "deselected", "deselected test_inner.py::test_broken")
    assert_control_passed(rec)


def test_not_found_in_the_child(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
if os.environ.get("TRIGGER") != "hide":
    @pytest.mark.isolated(env={"TRIGGER": "hide"})
    def test_broken():
        pass
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "not found", "no test with node id test_inner.py::test_broken")
    assert_control_passed(rec)


SPLITTING_CONFTEST = """
import os

def pytest_generate_tests(metafunc):
    if os.environ.get("TRIGGER") == "split" and metafunc.function.__name__ == "test_broken":
        metafunc.fixturenames.append("copy")
        metafunc.parametrize("copy", ["a", "b"])
"""


def test_several_matched_in_the_child_and_none_ran(pytester: pytest.Pytester) -> None:
    ran = pytester.path / "ran"
    pytester.makeconftest(SPLITTING_CONFTEST)
    rec = run_inner(
        pytester,
        f"""
@pytest.mark.isolated(env={{"TRIGGER": "split"}})
def test_broken():
    open({str(ran)!r}, "a").write("ran\\n")
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "several matched", "test_broken[a]", "test_broken[b]")
    assert not ran.exists()  # the child refused to run either of them
    assert_control_passed(rec)


def test_collection_error_in_the_child(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
if os.environ.get("TRIGGER") == "break":
    raise ImportError("the settings module refused this environment")

@pytest.mark.isolated(env={"TRIGGER": "break"})
def test_broken():
    pass
"""
        + CONTROL,
    )
    assert_kind(
        rec, "test_broken", "collection error", "the settings module refused this environment"
    )
    assert_control_passed(rec)


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_killed_by_a_signal(pytester: pytest.Pytester, launcher: str) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated()
def test_broken():
    print("about to die", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""",
        launcher,
    )
    text = assert_kind(
        rec, "test_broken", "killed by signal", "SIGKILL (9)", "during the call phase"
    )
    assert "about to die" in text  # printed by the test before it died


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie nobody reaped (PID 1 may not reap here)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_timed_out_kills_the_child_and_what_it_started(
    pytester: pytest.Pytester, launcher: str
) -> None:
    pidfile = pytester.path / "grandchild.pid"
    # Long enough for the child to reach the call phase even when spawn starts slowly.
    limit = 3 if launcher == "forkserver" else 10
    started = time.monotonic()
    rec = run_inner(
        pytester,
        f"""
@pytest.mark.isolated(timeout={limit})
def test_broken():
    proc = subprocess.Popen(["sleep", "120"])
    open({str(pidfile)!r}, "w").write(str(proc.pid))
    time.sleep(120)
""",
        launcher,
    )
    assert_kind(rec, "test_broken", "timed out", f"timed out after {limit} s", "during the call")
    assert time.monotonic() - started < 60
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"the test's subprocess {pid} outlived the timeout"


EXITING_CONFTEST = """
import os

if os.environ.get("TRIGGER") == "exit":
    print("conftest exits the process", flush=True)
    os._exit(3)
"""


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_exited_before_running(pytester: pytest.Pytester, launcher: str) -> None:
    pytester.makeconftest(EXITING_CONFTEST)
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated(env={"TRIGGER": "exit"})
def test_broken():
    pass
"""
        + CONTROL,
        launcher,
    )
    text = assert_kind(rec, "test_broken", "exited before running", "exit status 3")
    assert "conftest exits the process" in text  # the child's output is attached
    assert_control_passed(rec)


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_exit_status_0_in_the_middle_of_the_test_is_not_a_pass(
    pytester: pytest.Pytester, launcher: str
) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated()
def test_broken():
    os._exit(0)
""",
        launcher,
    )
    assert_kind(rec, "test_broken", "exited during the test", "exit status 0")


def test_a_bad_exit_status_after_a_passing_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import os

def pytest_unconfigure(config):
    if os.environ.get("TRIGGER") == "bad-exit":
        os._exit(4)
"""
    )
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated(env={"TRIGGER": "bad-exit"})
def test_broken():
    pass
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "exit status", "exit status 4")
    assert_control_passed(rec)


def test_invalid_marker_arguments_fail_naming_the_test(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated(env={"DYN_PARSER_VERSION": 2})
def test_bad_value():
    pass
""",
    )
    (report,) = [r for r in rec.getreports("pytest_runtest_logreport") if r.failed]
    assert "test_bad_value" in report.longreprtext
    assert "env['DYN_PARSER_VERSION'] must be a str or None" in report.longreprtext


def test_terminal_summary_names_the_kind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner=HEADER
        + """
@pytest.mark.isolated()
def test_broken():
    os._exit(0)
"""
    )
    result = pytester.runpytest("-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["FAILED test_inner.py::test_broken - isolated child did not pass*"]
    )
    assert os.environ.get("TRIGGER") is None


@pytest.mark.parametrize("launcher", ["forkserver", "spawn"])
def test_processes_a_passing_test_leaves_behind_are_killed(
    pytester: pytest.Pytester, launcher: str
) -> None:
    pidfile = pytester.path / "leftover.pid"
    rec = run_inner(
        pytester,
        f"""
@pytest.mark.isolated()
def test_leaves_a_process():
    proc = subprocess.Popen(["sleep", "120"])
    open({str(pidfile)!r}, "w").write(str(proc.pid))
""",
        launcher,
    )
    assert call_report(rec, "test_leaves_a_process").passed
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


TWO_TESTS = """
@pytest.mark.isolated()
def test_x():
    assert os.environ.get("PYTEST_XDIST_WORKER") is None

@pytest.mark.isolated(env={"OTHER": "1"})  # another environment: another server, were it not
def test_y():
    assert os.environ["OTHER"] == "1"
"""


def assert_fell_back_once(rec: pytest.HookRecorder, *fragments: str) -> None:
    """Both tests ran (by spawn) and passed; one warning line said why, once for the run."""
    rec.assertoutcome(passed=2)
    calls = rec.getcalls("pytest_warning_recorded")
    messages = [str(c.warning_message.message) for c in calls]
    fallback = [m for m in messages if "the fork server could not start" in m]
    assert len(fallback) == 1, messages
    assert "\n" not in fallback[0] and "uses spawn instead" in fallback[0]
    for fragment in fragments:
        assert fragment in fallback[0]
    for report in rec.getreports("pytest_runtest_logreport"):
        if report.when == "call":
            assert "launcher: spawn (the fork server could not start)" in report.sections[-1][1]


def test_a_server_whose_preload_starts_a_thread_falls_back_to_spawn_once(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = tmp_path_factory.mktemp("third_party")  # not under the inner project's root
    (outside / "threaded_lib.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(outside))
    pytester.makeini("[pytest]\nisolated_preload = threaded_lib\n")
    rec = run_inner(pytester, TWO_TESTS)
    assert_fell_back_once(rec, "has threads")


def test_a_server_that_would_preload_a_project_module_falls_back_to_spawn_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(project_settings="import os\nMODE = os.environ.get('DYN_PARSER_VERSION')\n")
    pytester.makeini("[pytest]\npythonpath = .\nisolated_preload = project_settings\n")
    rec = run_inner(pytester, TWO_TESTS)
    assert_fell_back_once(rec, "'project_settings' is a project module")


def test_a_project_pytest_itself_imports_falls_back_to_spawn_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for pluggy's own suite: the project is a package pytest itself imports (here a copy
    # of iniconfig on the project's path), so the server, which imports pytest, cannot keep
    # project modules out, and says so.
    import iniconfig

    shutil.copytree(Path(iniconfig.__file__).parent, pytester.path / "iniconfig")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))  # for the server and the children
    rec = run_inner(pytester, TWO_TESTS)
    assert_fell_back_once(rec, "imported project modules", "iniconfig")


def test_a_hung_child_does_not_outlive_a_killed_parent(pytester: pytest.Pytester) -> None:
    pidfile = pytester.path / "child.pid"
    pytester.makepyfile(
        test_inner=HEADER
        + f"""
@pytest.mark.isolated()
def test_hangs():
    open({str(pidfile)!r}, "w").write(str(os.getpid()))
    time.sleep(120)
"""
    )
    parent = pytester.popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--isolated-launcher=forkserver",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pidfile.read_text())
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "the isolated child outlived its killed parent"
