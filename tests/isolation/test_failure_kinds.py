"""Mutation tests: inner pytest sessions with deliberately broken isolated tests.

Each broken shape must come out as a failure in the parent that names its kind, with the child's
output attached; the control in the same file (same code, without the trigger) passes, so the
failure is caused by what the child did and nothing else.
"""

from __future__ import annotations

import os
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


def test_skipped_in_the_child(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated()
def test_broken():
    pytest.skip("no backend in this environment")
"""
        + CONTROL,
    )
    text = assert_kind(rec, "test_broken", "skipped", "no backend in this environment")
    assert "1 skipped" in text.split("--- isolated child output ---")[1]  # the child's own words
    assert_control_passed(rec)


def test_skipif_true_only_in_the_child_environment(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated(env={"TRIGGER": "on"})
@pytest.mark.skipif("os.environ.get('TRIGGER') == 'on'", reason="trigger is on")
def test_broken():
    pass
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "skipped", "trigger is on")
    assert_control_passed(rec)


def test_a_skip_decided_in_the_parent_is_a_skip_and_starts_no_child(
    pytester: pytest.Pytester,
) -> None:
    ran = pytester.path / "ran"
    rec = run_inner(
        pytester,
        f"""
@pytest.mark.isolated()
@pytest.mark.skip(reason="documented: not on this platform")
def test_skipped():
    open({str(ran)!r}, "w").close()
""",
    )
    rec.assertoutcome(skipped=1)
    (skip,) = [r for r in rec.getreports("pytest_runtest_logreport") if r.skipped]
    assert "documented: not on this platform" in str(skip.longrepr)
    assert not ran.exists()


def test_xfailed(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated()
@pytest.mark.xfail(reason="known parser bug")
def test_broken():
    assert False
"""
        + CONTROL,
    )
    assert_kind(rec, "test_broken", "xfailed", "known parser bug")
    assert_control_passed(rec)


def test_xpassed(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.mark.isolated()
@pytest.mark.xfail(reason="thought broken")
def test_broken():
    assert True
""",
    )
    assert_kind(rec, "test_broken", "xpassed", "thought broken")


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


def test_a_real_failure_is_relayed_with_the_child_traceback(pytester: pytest.Pytester) -> None:
    rec = run_inner(
        pytester,
        """
@pytest.fixture
def broken_fixture():
    raise RuntimeError("fixture could not start")

@pytest.mark.isolated()
def test_fails():
    value = 41
    assert value == 42

@pytest.mark.isolated()
def test_errors(broken_fixture):
    pass
""",
    )
    failed = call_report(rec, "test_fails")
    assert failed.failed and "assert 41 == 42" in failed.longreprtext
    assert "isolated child did not pass" not in failed.longreprtext
    (setup_error,) = [
        r
        for r in rec.getreports("pytest_runtest_logreport")
        if r.nodeid.endswith("test_errors") and r.when == "setup"
    ]
    assert setup_error.failed and "fixture could not start" in setup_error.longreprtext


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
    pytest.skip("reason shown")
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


def test_a_server_whose_preload_starts_a_thread_refuses_to_fork(
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
    rec = run_inner(pytester, "@pytest.mark.isolated()\ndef test_x():\n    pass\n")
    (error,) = [r for r in rec.getreports("pytest_runtest_logreport") if r.failed]
    assert "fork server failed to start" in error.longreprtext
    assert "has threads" in error.longreprtext


def test_a_server_refuses_to_preload_a_project_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project_settings="import os\nMODE = os.environ.get('DYN_PARSER_VERSION')\n")
    pytester.makeini("[pytest]\npythonpath = .\nisolated_preload = project_settings\n")
    rec = run_inner(pytester, "@pytest.mark.isolated()\ndef test_x():\n    pass\n")
    (error,) = [r for r in rec.getreports("pytest_runtest_logreport") if r.failed]
    assert "'project_settings' is a project module" in error.longreprtext


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
