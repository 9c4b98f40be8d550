"""The parent's side of an isolated test: start its child, read its record, report.

Imported by the plugin only when a test is marked isolated.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from buildtool.isolation import accelerators
from buildtool.isolation.child import ChildRequest
from buildtool.isolation.environ import child_environ, describe
from buildtool.isolation.events import read_events
from buildtool.isolation.launch import IsolationError, Launchers
from buildtool.isolation.settings import IsolationWarning, Settings, State, inherited_names
from buildtool.isolation.spec import IsolationSpec, spec_for
from buildtool.isolation.verdict import Verdict, classify, is_subtest

OUTPUT_LIMIT = 20_000  # characters of child output attached to a report


def warn(message: str) -> None:
    """One warning line. Under -W error the warning raises: the terminal summary says it too,
    and the test that happened to meet it is not at fault."""
    with contextlib.suppress(Warning):
        warnings.warn(IsolationWarning(message), stacklevel=2)


def run_protocol(item: pytest.Item, nextitem: pytest.Item | None, state: State) -> None:
    """The runtest protocol of an isolated test, in the parent."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = list(_isolated_reports(item, state))
    # The parent's own setup stack (fixtures of earlier tests): tear down what nextitem does not
    # share, as the normal protocol's teardown phase would.
    teardown = pytest.CallInfo.from_call(
        lambda: item.session._setupstate.teardown_exact(nextitem), when="teardown"
    )
    if teardown.excinfo is not None:
        error = ihook.pytest_runtest_makereport(item=item, call=teardown)
        reports = [r for r in reports if r.when != "teardown"] + [error]
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _skip_in_parent(item: pytest.Item) -> list[pytest.TestReport] | None:
    """An unconditional `skip` marker is a skip decided here: no child starts for it.

    (`skipif` conditions are evaluated in the child, under the test's environment, and its
    skip is relayed like any report.) The report is the one pytest makes for a skip marker.
    """
    mark = item.get_closest_marker("skip")
    if mark is None:
        return None
    reason = mark.kwargs.get("reason", mark.args[0] if mark.args else "unconditional skip")
    path, line = item.reportinfo()[:2]
    where = (os.fspath(path), (line or 0) + 1, f"Skipped: {reason}")
    return [
        _report(item, "setup", "skipped", where),
        _report(item, "teardown", "passed", None),
    ]


def _report(
    item: pytest.Item,
    when: str,
    outcome: str,
    longrepr: str | tuple[str, int, str] | None,
    sections: Sequence[tuple[str, str]] = (),
    duration: float = 0.0,
) -> pytest.TestReport:
    now = time.time()
    return pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome=cast(Any, outcome),
        longrepr=longrepr,
        when=cast(Any, when),
        sections=list(sections),
        duration=duration,
        start=now - duration,
        stop=now,
        user_properties=list(item.user_properties),
    )


def _workdir(state: State) -> Path:
    if state.workdir is None:
        state.workdir = Path(tempfile.mkdtemp(prefix="pytest-isolated-"))
    return state.workdir


def _accelerators(state: State, config: pytest.Config) -> tuple[str, ...]:
    """The accelerators this run uses: those requested that pass their checks (once)."""
    if "accelerators" not in state.extra:
        on, off = accelerators.select(state.settings.accelerators)
        if off:
            warn(accelerators.describe_off(off))
            state.extra["off"] = ", ".join(off)
        state.extra["accelerators"] = tuple(n for n in accelerators.NAMES if n in on)
    return cast(tuple[str, ...], state.extra["accelerators"])


def _launchers(state: State, config: pytest.Config) -> Launchers:
    if state.launchers is None:
        s = state.settings
        state.launchers = Launchers(
            s.launcher,
            _workdir(state),
            config.rootpath,
            list(s.preload),
            s.max_servers,
            s.snapshot,
            on_fallback=lambda why: warn(
                f"isolated: the fork server could not start ({why}); "
                "every isolated test of this run uses spawn instead"
            ),
            accelerators=_accelerators(state, config),
        )
    return state.launchers


def _child_argv(
    config: pytest.Config,
    nodeid: str,
    basetemp: Path,
    s: Settings,
    used: Sequence[str],
) -> list[str]:
    argv = [os.path.join(str(config.rootpath), nodeid), f"--rootdir={config.rootpath}"]
    if config.inipath is not None:
        argv += ["-c", str(config.inipath)]
    # tee-sys: reports still carry captured output, and the child's output file keeps what a
    # test printed even when the child dies before reporting.
    argv += ["-p", "no:cacheprovider", "-q", "--capture=tee-sys", f"--basetemp={basetemp}"]
    # The accelerators the parent checked (what the child's server used, for the record).
    argv.append(f"--isolated-accelerators={','.join(used) or 'none'}")
    if config.pluginmanager.has_plugin("xdist"):
        argv += ["-n", "0"]  # one test: never distribute, whatever addopts says
    return argv + list(s.passthrough)


def _isolated_reports(item: pytest.Item, state: State) -> Iterator[pytest.TestReport]:
    config = item.config
    try:
        spec = spec_for(item)
    except (TypeError, ValueError) as exc:
        yield _report(item, "setup", "failed", f"invalid isolated marker: {exc}")
        yield _report(item, "teardown", "passed", None)
        return
    assert spec is not None
    skipped = _skip_in_parent(item)
    if skipped is not None:
        yield from skipped
        return
    s = state.settings
    state.count += 1
    testdir = _workdir(state) / str(state.count)
    testdir.mkdir()
    env = child_environ(s.parent_environ, spec.env_map, inherited_names(s))
    used = _accelerators(state, config)
    request = ChildRequest(
        nodeid=item.nodeid,
        argv=tuple(_child_argv(config, item.nodeid, testdir / "basetemp", s, used)),
        cwd=str(config.invocation_params.dir),
        env=env,
        requested_env=spec.env_map,
        report_path=str(testdir / "events.jsonl"),
        output_path=str(testdir / "output.txt"),
        accelerators=used,
    )
    timeout = spec.timeout or s.timeout
    started = time.monotonic()
    try:
        child, how = _launchers(state, config).run(request, timeout)
    except IsolationError as exc:
        yield _report(item, "setup", "failed", f"isolated: {exc}")
        yield _report(item, "teardown", "passed", None)
        shutil.rmtree(testdir, ignore_errors=True)
        return
    elapsed = time.monotonic() - started
    events, damaged = read_events(Path(request.report_path))
    verdict = classify(item.nodeid, events, child, damaged)
    output = _read_output(Path(request.output_path))
    shutil.rmtree(testdir, ignore_errors=True)
    context = _context(spec, env, s, how)
    yield from _verdict_reports(item, verdict, context, output, elapsed)


def _context(spec: IsolationSpec, env: dict[str, str], s: Settings, how: str) -> str:
    inherited = sorted(set(env) - set(spec.env_map))
    extra = [n for n in inherited_names(s) if n in inherited]
    text = f"env: {describe(spec.env_map)}; inherited: {', '.join(inherited) or 'nothing'}"
    if extra:
        text += f" (isolated_inherit: {', '.join(f'{n}={env[n]}' for n in extra)})"
    return f"{text}; launcher: {how}"


def _read_output(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    if len(text) > OUTPUT_LIMIT:
        text = f"[... {len(text) - OUTPUT_LIMIT} characters cut ...]\n" + text[-OUTPUT_LIMIT:]
    return text


def _verdict_reports(
    item: pytest.Item, verdict: Verdict, context: str, output: str, elapsed: float
) -> Iterator[pytest.TestReport]:
    config = item.config
    if verdict.relayed:
        # The child's own reports, rebuilt by pytest's hook (subtest reports by the subtests
        # plugin's), so every outcome reads and counts as it would in-process.
        for data in verdict.reports:
            if isinstance(data.get("longrepr"), list):
                # A skip's (path, line, reason) tuple, which JSON made a list (xdist's
                # transport keeps tuples): pytest's terminal requires the tuple.
                data = {**data, "longrepr": tuple(data["longrepr"])}
            report = config.hook.pytest_report_from_serializable(config=config, data=data)
            assert isinstance(report, pytest.TestReport)
            if not is_subtest(data):
                report.sections.append(("isolated", context))
            yield report
        return
    # The child's output goes in the message itself: junit XML and -rf summaries keep it.
    message = f"isolated child did not pass [{verdict.kind}]: {verdict.message}\n  {context}"
    longrepr = f"{message}\n--- isolated child output ---\n{output or '(no output)'}"
    yield _report(item, "setup", "passed", None)
    yield _report(item, "call", "failed", longrepr, (), elapsed)
    yield _report(item, "teardown", "passed", None)
