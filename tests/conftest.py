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

# Folders (relative to tests/) and their reason; the longest matching folder decides, and
# `None` marks a folder inside an independent one whose tests do depend on the mode.
MODE_INDEPENDENT_DIRS: dict[str, str | None] = {
    "buildtool": "the build cache never reads DYN_PARSER_VERSION; slow, runs once in nox -s test",
    "buildtool/images": "image builds, and containers started with their own environment "
    "(never the suite's DYN_PARSER_VERSION); slow, runs once in nox -s test",
    "buildtool/isolation": "tests of the isolation plugin itself set every parser mode they "
    "need explicitly; runs once in nox -s test",
    "parsers": "parsers.parse/StreamParser take the generation as an argument and never read "
    "the environment; each test names the generation it checks; runs once in nox -s test",
    "parsers/selection": "load_settings reads the environ mapping each test passes in, never "
    "the process environment; runs once in nox -s test",
    "parsers/routing": None,  # the default route follows the suite's DYN_PARSER_VERSION
}


def mode_independence(parts: tuple[str, ...]) -> str | None:
    """The reason a test under these folders cannot depend on the parser mode, if any."""
    for depth in range(len(parts), 0, -1):
        key = "/".join(parts[:depth])
        if key in MODE_INDEPENDENT_DIRS:
            return MODE_INDEPENDENT_DIRS[key]
    return None


@pytest.hookimpl(tryfirst=True)  # before the isolation plugin turns the marker into a skip
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            folders = item.path.relative_to(HERE).parts[:-1]
        except ValueError:
            continue
        reason = mode_independence(folders)
        if reason and item.get_closest_marker("parser_mode_independent") is None:
            item.add_marker(pytest.mark.parser_mode_independent(reason=reason))
