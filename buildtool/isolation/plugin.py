"""pytest plugin (entry point `pytest11`): the `isolated` marker."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "isolated(env=None): run this test in a child process whose environment is an "
        "allowlist plus `env` (None values unset)",
    )
