"""Suite-wide settings. Keep this light: every isolated child imports it too.

Directories whose tests cannot depend on the suite's parser mode (`DYN_PARSER_VERSION`, set by
`nox -s test-v1` / `test-v2`) are marked `parser_mode_independent` here, with the reason; under
`--parser-mode-only` (those two sessions) they are reported as skipped with that reason instead
of re-running identically. See docs/testing.md, "Parser modes". The option, the marker and
the mode variables' inheritance live in the project plugin `parser_modes.py`, beside this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["parser_modes"]

HERE = Path(__file__).parent

MODE_INDEPENDENT_DIRS: dict[str, str] = {
    "buildtool": "the build cache never reads DYN_PARSER_VERSION; slow, runs once in nox -s test",
    "images": "image builds, and containers started with their own environment (never the "
    "suite's DYN_PARSER_VERSION); slow, runs once in nox -s test",
    "parsers": "parsers.parse/StreamParser take the generation as an argument and never read "
    "the environment; each test names the generation it checks; runs once in nox -s test",
    "selection": "load_settings reads the environ mapping each test passes in, never the "
    "process environment; runs once in nox -s test",
    "isolation": "tests of the isolation plugin itself set every parser mode they need "
    "explicitly; runs once in nox -s test",
}


@pytest.hookimpl(tryfirst=True)  # before the isolation plugin turns the marker into a skip
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            top = item.path.relative_to(HERE).parts[0]
        except ValueError:
            continue
        reason = MODE_INDEPENDENT_DIRS.get(top)
        if reason and item.get_closest_marker("parser_mode_independent") is None:
            item.add_marker(pytest.mark.parser_mode_independent(reason=reason))
