"""pytest plugin (entry point `pytest11`): the `isolated` and `parser_mode_independent` markers.

A test marked `@pytest.mark.isolated(env={...})` runs in a child process whose environment is an
allowlist of the parent's plus `env`; the parent relays the child's reports only after checking,
from the child's event record, that exactly this one test ran and passed (see `verdict`). See
docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from buildtool.isolation import rewrite_scope
from buildtool.isolation.child import ChildRequest
from buildtool.isolation.environ import MODE_VARIABLES, child_environ, describe
from buildtool.isolation.events import ChildReporter, read_events
from buildtool.isolation.launch import IsolationError, Launcher, Launchers, default_launcher
from buildtool.isolation.spec import MARKER, VARIANT_ARG, IsolationSpec, spec_for, variants_of
from buildtool.isolation.verdict import Verdict, classify, is_subtest

MODE_MARKER = "parser_mode_independent"


class IsolationWarning(pytest.PytestWarning):
    """The isolation plugin changed how it runs (e.g. the fork server gave way to spawn)."""


def _warn(message: str) -> None:
    # Under -W error the warning raises: the terminal summary line says it too, and the test
    # that happened to meet it is not at fault.
    with contextlib.suppress(Warning):
        warnings.warn(IsolationWarning(message), stacklevel=2)


OUTPUT_LIMIT = 20_000  # characters of child output attached to a report


@dataclass(frozen=True)
class Settings:
    """Read once at configure time; the plugin never reads os.environ afterwards."""

    launcher: Launcher
    timeout: float
    preload: tuple[str, ...]
    max_servers: int
    snapshot: bool
    parent_environ: dict[str, str]
    mode_only: bool
    passthrough: tuple[str, ...]  # parent command-line options the child needs too

    @property
    def mode(self) -> str | None:
        return self.parent_environ.get("DYN_PARSER_VERSION")


@dataclass
class _State:
    settings: Settings
    workdir: Path | None = None
    launchers: Launchers | None = None
    count: int = 0


_STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("isolated", "isolated tests (buildtool.isolation, docs/testing.md)")
    group.addoption(
        "--isolated-launcher",
        choices=("auto", "forkserver", "spawn"),
        default=None,
        help="how isolated tests start: a warm fork server per environment, or a fresh "
        "interpreter each (default: ini isolated_launcher, auto = forkserver where fork is safe)",
    )
    group.addoption(
        "--isolated-timeout",
        type=float,
        default=None,
        help="seconds before an isolated child is killed (default: ini isolated_timeout)",
    )
    group.addoption(
        "--parser-mode-only",
        action="store_true",
        default=False,
        help="report tests whose outcome cannot depend on the suite's DYN_PARSER_VERSION as "
        "skipped, with their reason (used by nox -s test-v1 / test-v2)",
    )
    parser.addini("isolated_launcher", "auto, forkserver or spawn", default="auto")
    parser.addini("isolated_timeout", "seconds before an isolated child is killed", default="300")
    parser.addini(
        "isolated_preload",
        "third-party modules each fork server imports before forking (never project modules)",
        type="linelist",
        default=[],
    )
    parser.addini("isolated_max_servers", "fork servers kept alive per process", default="6")
    parser.addini(
        "isolated_snapshot",
        "fork children from a process that has parsed pytest's configuration up to the "
        "conftests (see docs/testing.md); false: each child parses it itself",
        type="bool",
        default=True,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Before any conftest or test module can import the project (see rewrite_scope).
    rewrite_scope.limit(early_config.pluginmanager.rewrite_hook)


def _passthrough(args: Sequence[str]) -> tuple[str, ...]:
    """Options of the parent's command line that shape how the child loads tests."""
    with_value = {"-p", "-W", "--pythonwarnings", "-o", "--override-ini", "--import-mode"}
    kept: list[str] = []
    items = list(args)
    index = 0
    while index < len(items):
        arg = items[index]
        index += 1
        if arg in with_value and index < len(items):
            kept += [arg, items[index]]
            index += 1
            continue
        joined = arg.split("=", 1)[0] in with_value and "=" in arg
        short = arg[:2] in ("-p", "-W", "-o") and len(arg) > 2 and not arg.startswith("--")
        if joined or short or arg == "--noconftest":
            kept.append(arg)
    return tuple(kept)


def _child_reporter(config: pytest.Config) -> ChildReporter | None:
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, ChildReporter):
            return plugin
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "isolated(env=None, envs=None, timeout=None): run this test in a child process whose "
        "environment is an allowlist plus `env` (None values unset); `envs` runs it once per "
        "environment (mapping id -> env); see docs/testing.md",
    )
    config.addinivalue_line(
        "markers",
        f"{MODE_MARKER}(reason): the test's outcome cannot depend on DYN_PARSER_VERSION; "
        "--parser-mode-only (test-v1/test-v2) reports it as skipped with this reason",
    )
    if _child_reporter(config) is not None:
        return
    launcher = config.getoption("isolated_launcher") or str(config.getini("isolated_launcher"))
    if launcher not in ("auto", "forkserver", "spawn"):
        raise pytest.UsageError(
            f"isolated_launcher: expected auto, forkserver or spawn, got {launcher!r}"
        )
    if launcher == "forkserver" and default_launcher() != "forkserver":
        raise pytest.UsageError("--isolated-launcher=forkserver: fork is not available here")
    timeout_text = config.getoption("isolated_timeout") or config.getini("isolated_timeout")
    try:
        timeout = float(timeout_text)
        max_servers = int(str(config.getini("isolated_max_servers")))
    except ValueError as exc:
        raise pytest.UsageError(f"isolated_timeout / isolated_max_servers: {exc}") from None
    if timeout <= 0:
        raise pytest.UsageError(f"isolated_timeout must be positive, got {timeout_text!r}")
    settings = Settings(
        launcher=default_launcher() if launcher == "auto" else cast(Launcher, launcher),
        timeout=timeout,
        preload=tuple(cast(list[str], config.getini("isolated_preload"))),
        max_servers=max_servers,
        snapshot=bool(config.getini("isolated_snapshot")),
        parent_environ=dict(os.environ),
        mode_only=bool(config.getoption("parser_mode_only")),
        passthrough=_passthrough(config.invocation_params.args),
    )
    config.stash[_STATE] = _State(settings)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.launchers is not None:
        state.launchers.close()
    if state.workdir is not None:
        shutil.rmtree(state.workdir, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is None:
        return []
    s = state.settings
    mode = f"DYN_PARSER_VERSION={s.mode}" if s.mode is not None else "DYN_PARSER_VERSION unset"
    only = ", mode-independent tests reported as skipped" if s.mode_only else ""
    return [f"isolated: launcher {s.launcher}, timeout {s.timeout:g} s; parser mode: {mode}{only}"]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or state.count == 0:
        return
    line = f"isolated: {state.count} tests in child processes ({state.settings.launcher})"
    if state.launchers is not None and state.launchers.fallback is not None:
        line += f"; spawn used: the fork server could not start ({state.launchers.fallback})"
    started = state.launchers.started if state.launchers is not None else []
    if started:
        warm = sum(info.started_in for info in started)
        line += f"; {len(started)} fork servers started, warm-up {warm:.2f} s in total"
    terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)  # after @parametrize: the variant id comes last
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    where = f"@pytest.mark.isolated on {metafunc.definition.nodeid}"
    variants = variants_of(metafunc.definition.iter_markers(MARKER), where)
    if not variants:
        return
    if VARIANT_ARG not in metafunc.fixturenames:
        metafunc.fixturenames.append(VARIANT_ARG)
    metafunc.parametrize(VARIANT_ARG, list(variants), ids=list(variants))


@pytest.fixture
def isolated_env(request: pytest.FixtureRequest) -> dict[str, str | None]:
    """The environment names this isolated test set (None: unset), variant included."""
    spec = spec_for(cast(pytest.Item, request.node))
    if spec is None:
        pytest.fail("the isolated_env fixture needs @pytest.mark.isolated on the test")
    return spec.env_map


def _mode_reason(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker(MODE_MARKER)
    if mark is not None:
        reason = mark.kwargs.get("reason") or (mark.args[0] if mark.args else None)
        if not reason:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MODE_MARKER} needs a reason")
        return f"parser-mode independent: {reason}"
    spec = spec_for(item)
    if spec is not None and "DYN_PARSER_VERSION" in spec.env_map:
        return (
            "parser-mode independent: its isolated env sets DYN_PARSER_VERSION itself, so the "
            "suite's mode cannot reach it (runs in nox -s test)"
        )
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.settings.mode_only:
        return
    for item in items:
        try:
            reason = _mode_reason(item)
        except (TypeError, ValueError):
            continue  # a malformed marker: reported as the test's failure when it runs
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    config = item.config
    state = config.stash.get(_STATE, None)
    if state is None or item.get_closest_marker(MARKER) is None:
        return None  # not isolated here (or we are the child: run it in-process)
    if config.option.setupplan or config.option.setuponly:
        return None
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
    return True


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


def _workdir(state: _State) -> Path:
    if state.workdir is None:
        state.workdir = Path(tempfile.mkdtemp(prefix="pytest-isolated-"))
    return state.workdir


def _launchers(state: _State, config: pytest.Config) -> Launchers:
    if state.launchers is None:
        s = state.settings
        state.launchers = Launchers(
            s.launcher,
            _workdir(state),
            config.rootpath,
            list(s.preload),
            s.max_servers,
            s.snapshot,
            on_fallback=lambda why: _warn(
                f"isolated: the fork server could not start ({why}); "
                "every isolated test of this run uses spawn instead"
            ),
        )
    return state.launchers


def _child_argv(config: pytest.Config, nodeid: str, basetemp: Path, s: Settings) -> list[str]:
    argv = [os.path.join(str(config.rootpath), nodeid), f"--rootdir={config.rootpath}"]
    if config.inipath is not None:
        argv += ["-c", str(config.inipath)]
    # tee-sys: reports still carry captured output, and the child's output file keeps what a
    # test printed even when the child dies before reporting.
    argv += ["-p", "no:cacheprovider", "-q", "--capture=tee-sys", f"--basetemp={basetemp}"]
    if config.pluginmanager.has_plugin("xdist"):
        argv += ["-n", "0"]  # one test: never distribute, whatever addopts says
    return argv + list(s.passthrough)


def _isolated_reports(item: pytest.Item, state: _State) -> Iterator[pytest.TestReport]:
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
    env = child_environ(s.parent_environ, spec.env_map)
    request = ChildRequest(
        nodeid=item.nodeid,
        argv=tuple(_child_argv(config, item.nodeid, testdir / "basetemp", s)),
        cwd=str(config.invocation_params.dir),
        env=env,
        requested_env=spec.env_map,
        report_path=str(testdir / "events.jsonl"),
        output_path=str(testdir / "output.txt"),
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
    mode = [n for n in MODE_VARIABLES if n in inherited]
    text = f"env: {describe(spec.env_map)}; inherited: {', '.join(inherited) or 'nothing'}"
    if mode:
        text += f" (suite parser mode: {', '.join(f'{n}={env[n]}' for n in mode)})"
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
