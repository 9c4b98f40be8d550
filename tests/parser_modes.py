"""This project's parser-mode sessions (`nox -s test-v1` / `test-v2`): a project plugin.

Loaded by `tests/conftest.py` (`pytest_plugins`); not part of the installed isolation plugin,
which knows nothing of parser modes. See docs/testing.md, "Parser modes".

- The suite's mode variables reach every isolated child (added to `isolated_inherit`).
- `--parser-mode-only` reports a test whose outcome cannot depend on the suite's mode as skipped
  with its reason: marked `parser_mode_independent(reason=...)`, or isolated with an env that
  sets `DYN_PARSER_VERSION` itself.
- The report header names the suite's mode.
- `PARSER_MODES` is the usual `envs=` for a test that must hold under each parser mode:
  `@pytest.mark.isolated(envs=PARSER_MODES)` gives the ids `unset`, `v1` and `v2`.
"""

from __future__ import annotations

import os

import pytest

from buildtool.isolation.spec import spec_for

MODE_MARKER = "parser_mode_independent"
MODE_VARIABLES = ("DYN_PARSER_VERSION", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2")
# Each mode also unsets the deprecated alias, so an alias in the parent cannot pick the mode.
PARSER_MODES: dict[str, dict[str, str | None]] = {
    "unset": {"DYN_PARSER_VERSION": None, "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
    "v1": {"DYN_PARSER_VERSION": "1", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
    "v2": {"DYN_PARSER_VERSION": "2", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
}
_MODE_ONLY = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--parser-mode-only",
        action="store_true",
        default=False,
        help="report tests whose outcome cannot depend on the suite's DYN_PARSER_VERSION as "
        "skipped, with their reason (used by nox -s test-v1 / test-v2)",
    )


@pytest.hookimpl(tryfirst=True)  # before the isolation plugin reads isolated_inherit
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MODE_MARKER}(reason): the test's outcome cannot depend on DYN_PARSER_VERSION; "
        "--parser-mode-only (test-v1/test-v2) reports it as skipped with this reason",
    )
    for name in MODE_VARIABLES:
        config.addinivalue_line("isolated_inherit", name)
    config.stash[_MODE_ONLY] = bool(config.getoption("parser_mode_only"))


def pytest_report_header(config: pytest.Config) -> str:
    mode = os.environ.get("DYN_PARSER_VERSION")
    text = f"DYN_PARSER_VERSION={mode}" if mode is not None else "DYN_PARSER_VERSION unset"
    only = ", mode-independent tests reported as skipped" if config.stash[_MODE_ONLY] else ""
    return f"parser mode: {text}{only}"


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
    if not config.stash[_MODE_ONLY]:
        return
    for item in items:
        try:
            reason = _mode_reason(item)
        except (TypeError, ValueError):
            continue  # a malformed marker: reported as the test's failure when it runs
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
