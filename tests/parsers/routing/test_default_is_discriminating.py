"""The default-route claim can fail: with the family-default table changed to V1, the test
"Qwen3-Coder auto routes through V2 by default" must fail; with the real table it passes.

An inner pytest session runs tests/parsers/routing/test_default_route.py as is; the mutation is a
conftest.py that empties `parsers.routing.V2_DEFAULT_TOOL_PARSERS` at import, i.e. inside the
isolated child, where the routing test runs. The inner session runs in a subprocess: in-process
(`inline_run`) its conftest would mutate this worker's `parsers.routing` for every later test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = [
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
    pytest.mark.parser_mode_independent(
        reason="its inner session pins DYN_PARSER_VERSION (unset) in the routing test's marker"
    ),
]

SOURCE = Path(__file__).with_name("test_default_route.py")
# Another name than the original's: the outer session has already imported that module.
TEST = "test_copied_default_route.py::test_qwen3_coder_auto_routes_through_v2_by_default"
DEFAULT_TO_V1 = """
import parsers.routing

# The mutation: no tool parser defaults to V2 any more (the default changed to V1).
parsers.routing.V2_DEFAULT_TOOL_PARSERS = frozenset()
"""


def _inner(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(test_copied_default_route=SOURCE.read_text())
    return pytester.runpytest_subprocess(TEST, "-p", "no:cacheprovider")


def test_the_default_route_test_passes_with_the_real_table(pytester: pytest.Pytester) -> None:
    _inner(pytester).assert_outcomes(passed=1)


def test_the_default_route_test_fails_when_the_default_is_v1(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(DEFAULT_TO_V1)
    result = _inner(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "legacy_jail" in out  # the route it got instead of parser_v2
    assert "isolated child did not pass" not in out  # a real assertion failure, in the call
