"""Guards of the plain path's private pytest names (docs/testing.md, "the private APIs they
use"): each test fails when the internal changes, before the plugin relies on it wrongly.

The accelerators' own internals are checked at startup (`accelerators.py`, with a fallback to
the plain path); these are the two the plain path itself reads, as pytest-xdist does.
"""

from __future__ import annotations

import pytest

from buildtool.isolation.verdict import is_subtest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def test_the_sessions_setup_state_tears_down_up_to_the_next_item(pytester: pytest.Pytester) -> None:
    """`item.session._setupstate.teardown_exact(nextitem)` (parent.run_protocol): tears down
    what the next item does not share, here everything, running the fixture's finalizer."""
    items = pytester.getitems(
        "import pytest\n"
        "DONE = []\n"
        "@pytest.fixture(scope='module')\n"
        "def resource():\n"
        "    yield 1\n"
        "    DONE.append('torn down')\n"
        "def test_a(resource): pass\n"
    )
    item = items[0]
    state = item.session._setupstate
    state.setup(item)
    done = item.module.DONE  # type: ignore[attr-defined]
    assert done == []
    state.teardown_exact(None)
    assert done == ["torn down"]


def test_a_serialized_subtest_report_is_recognised(pytester: pytest.Pytester) -> None:
    """`_report_type` (verdict.is_subtest): pytest's serialized subtest reports name it."""
    pytester.makepyfile(
        "def test_sub(subtests):\n    with subtests.test(msg='m'):\n        assert True\n"
    )
    reports = pytester.inline_run("-p", "no:isolated").getreports("pytest_runtest_logreport")
    config = pytester.parseconfigure()
    data = [
        config.hook.pytest_report_to_serializable(config=config, report=report)
        for report in reports
    ]
    flags = [is_subtest(d) for d in data]
    assert flags.count(True) == 1 and len(flags) == 4, flags  # setup, subtest, call, teardown
