"""pytest plugin (entry point `pytest11`): the `isolated` marker.

A test marked `@pytest.mark.isolated(env={...})` runs in a child process whose environment is an
allowlist of the parent's plus `env`; the parent relays the child's reports only after checking,
from the child's event record, that exactly this one test ran (see `verdict`). See
docs/testing.md.

A project that never uses the marker gets its options and the marker's registration, nothing
else: the machinery (`parent`, `launch`, ...) is imported at the first marked test, and no
hook changes anything for an unmarked one.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from buildtool.isolation import settings
from buildtool.isolation.events import ChildReporter
from buildtool.isolation.settings import STATE, IsolationWarning, State
from buildtool.isolation.spec import MARKER, VARIANT_ARG, spec_for, variants_of

__all__ = ["IsolationWarning"]


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
        "--isolated-plain",
        action="store_true",
        default=False,
        help="turn every accelerator off: a plain fork server (or spawn), no private pytest or "
        "Python internals (default: ini isolated_plain)",
    )
    group.addoption(
        "--isolated-accelerators",
        default=None,
        help="which accelerators to use: all, none, or a comma-separated list (default: ini "
        "isolated_accelerators); each is checked before use",
    )
    parser.addini("isolated_launcher", "auto, forkserver or spawn", default="auto")
    parser.addini(
        "isolated_plain", "turn every accelerator off (see --isolated-plain)", type="bool"
    )
    parser.addini("isolated_accelerators", "all, none, or a comma-separated list", default="all")
    parser.addini("isolated_timeout", "seconds before an isolated child is killed", default="300")
    parser.addini(
        "isolated_preload",
        "third-party modules each fork server imports before forking (never project modules)",
        type="linelist",
        default=[],
    )
    parser.addini("isolated_max_servers", "fork servers kept alive per process", default="6")
    parser.addini(
        "isolated_inherit",
        "more variables (names or glob patterns) every isolated child gets from the parent's "
        "environment, besides the fixed allowlist",
        type="linelist",
        default=[],
    )
    parser.addini(
        "isolated_snapshot",
        "fork children from a process that has parsed pytest's configuration up to the "
        "conftests (see docs/testing.md); false: each child parses it itself",
        type="bool",
        default=True,
    )


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
    if _child_reporter(config) is not None:
        return  # this is an isolated child: its one test runs in-process
    config.stash[STATE] = State(settings.read(config))


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.launchers is not None:
        state.launchers.close()
    if state.workdir is not None:
        import shutil

        shutil.rmtree(state.workdir, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or state.count == 0:
        return
    line = f"isolated: {state.count} tests in child processes ({state.settings.launcher})"
    if state.launchers is not None and state.launchers.fallback is not None:
        line += f"; spawn used: the fork server could not start ({state.launchers.fallback})"
    if "off" in state.extra:
        line += f"; accelerators off (see the warning): {state.extra['off']}"
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    config = item.config
    state = config.stash.get(STATE, None)
    if state is None or item.get_closest_marker(MARKER) is None:
        return None  # not isolated here (or we are the child: run it in-process)
    if config.option.setupplan or config.option.setuponly:
        return None
    from buildtool.isolation import parent  # the machinery: only for a marked test

    parent.run_protocol(item, nextitem, state)
    return True
