"""The route of every deployment x request shape under DYN_PARSER_VERSION unset, 1 and 2,
and under the suite's own mode (variant `session`, the one nox -s test-v1 / test-v2 run).

Each case runs in its own child process (`isolated`) whose environment sets the mode; the test
goes through the real startup path: `parsers.load_settings()` reads the child's os.environ,
then `parsers.select_route` decides. Expected routes come from the contract (routing_cases).
"""

from __future__ import annotations

import os

import pytest
from routing_cases import (
    DEPLOYMENTS,
    MODES,
    SHAPES,
    Deployment,
    expected_route,
    mode_value,
    request_for,
)

import parsers

CASES = [
    pytest.param(deployment, shape, id=f"{deployment.id}-{shape}")
    for deployment in DEPLOYMENTS
    for shape in SHAPES
]


@pytest.mark.isolated(envs=MODES)
@pytest.mark.parametrize(("deployment", "shape"), CASES)
def test_route(deployment: Deployment, shape: str, isolated_variant: str) -> None:
    value = mode_value(isolated_variant, os.environ)
    assert os.environ.get("DYN_PARSER_VERSION") == value
    expected = expected_route(deployment, shape, value)
    load = {"tool_parser": deployment.tool_parser, "reasoning_parser": deployment.reasoning_parser}
    if expected == "ConfigError":
        with pytest.raises(parsers.ConfigError) as err:
            parsers.load_settings(**load)
        assert "DYN_PARSER_VERSION" in str(err.value)
        return
    settings = parsers.load_settings(**load)  # from this process's environment
    assert settings.version == (value or "auto")
    if expected == "InvalidRequest":
        with pytest.raises(parsers.InvalidRequest) as bad:
            parsers.select_route(settings, request_for(shape))
        message = str(bad.value)
        assert "tool-call parser" in message
        if value == "2":
            assert "DYN_PARSER_VERSION=2" in message
        return
    route = parsers.select_route(settings, request_for(shape))
    assert route.kind == expected
    assert route.family == deployment.family
    assert route.generation == {"pass_through": None, "legacy_jail": 1, "parser_v2": 2}[expected]
