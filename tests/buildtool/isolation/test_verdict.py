"""`classify`: the child's reports are relayed only with a whole record of exactly this test;
every other shape is a named failure kind."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from buildtool.isolation.verdict import ChildExit, classify

NODE = "tests/t.py::test_a[v1]"
OK = ChildExit(0, None)


def report(when: str, outcome: str = "passed", nodeid: str = NODE, **extra: Any) -> dict[str, Any]:
    return {
        "event": "report",
        "data": {"nodeid": nodeid, "when": when, "outcome": outcome, "longrepr": None, **extra},
    }


def subtest(outcome: str = "passed", **extra: Any) -> dict[str, Any]:
    event = report("call", outcome, **extra)
    event["data"].update(_report_type="SubTestReport", **{"_subtest.context": {"msg": "m"}})
    return event


def run(*middle: dict[str, Any], collected: list[str] | None = None) -> list[dict[str, Any]]:
    nodes = [NODE] if collected is None else collected
    return [
        {"event": "hello", "pid": 1, "environ_names": ["PATH"]},
        {"event": "collected", "nodeids": nodes},
        *middle,
        {"event": "finish", "exitstatus": 0},
    ]


PASSING = run(
    {"event": "start", "nodeid": NODE}, report("setup"), report("call"), report("teardown")
)


def test_a_complete_record_passes_and_relays_three_reports() -> None:
    verdict = classify(NODE, PASSING, OK)
    assert verdict.passed
    assert [r["when"] for r in verdict.reports] == ["setup", "call", "teardown"]


@pytest.mark.parametrize(
    ("events", "child", "kind", "fragment"),
    [
        (PASSING[:2], ChildExit(None, 9, True, 2.0), "timed out", "timed out after 2 s"),
        (PASSING[:3], ChildExit(None, signal.SIGKILL), "killed by signal", "SIGKILL (9)"),
        (
            [*PASSING[:3], report("setup")],
            ChildExit(None, signal.SIGSEGV),
            "killed by signal",
            "during the call phase",
        ),
        (
            [{"event": "collect_error", "nodeid": "tests/t.py", "longrepr": "E"}, *PASSING],
            OK,
            "collection error",
            "'tests/t.py'",
        ),
        (PASSING[:1], ChildExit(3, None), "exited before running", "exit status 3"),
        (
            [*run(collected=[]), {"event": "deselected", "nodeids": [NODE]}],
            ChildExit(5, None),
            "deselected",
            NODE,
        ),
        (run(collected=[]), ChildExit(5, None), "not found", NODE),
        (run(collected=["tests/t.py::test_b"]), ChildExit(5, None), "not found", "test_b"),
        (
            run(collected=[NODE, NODE + "x"]),
            ChildExit(5, None),
            "several matched",
            "2 tests matched",
        ),
        (
            run(report("setup"), report("call"), report("call"), report("teardown")),
            OK,
            "several ran",
            "2 call phases",
        ),
        (
            run(report("setup"), report("call"), report("call", nodeid=NODE + "x")),
            OK,
            "several ran",
            NODE + "x",
        ),
        (
            run(report("setup"), report("setup"), report("call"), report("teardown")),
            OK,
            "several ran",
            "phases",
        ),
        (
            run(report("setup"), report("call", "failed"), report("teardown")),
            OK,
            "exit status",
            "exit status 1",
        ),
        (
            run(report("setup"), report("call"), report("teardown"), subtest("failed")),
            OK,
            "exit status",
            "exit status 1",
        ),
        (
            run(report("setup", "skipped", longrepr=["f", 1, "Skipped: x"])),
            OK,
            "exited during the test",
            "teardown",
        ),
        (
            [*PASSING[:3], report("setup")],
            ChildExit(0, None),
            "exited during the test",
            "exit status 0",
        ),
        (
            PASSING[:5],
            ChildExit(0, None),
            "exited during the test",
            "teardown",
        ),
        (PASSING[:-1], ChildExit(0, None), "exited during the test", "before pytest finished"),
        (PASSING, ChildExit(1, None), "exit status", "exit status 1"),
        (
            [*PASSING[:-1], {"event": "finish", "exitstatus": 3}],
            OK,
            "exit status",
            "status 3",
        ),
    ],
)
def test_every_failure_kind_is_named(
    events: list[dict[str, Any]], child: ChildExit, kind: str, fragment: str
) -> None:
    verdict = classify(NODE, events, child)
    assert not verdict.passed
    assert verdict.kind == kind
    assert fragment in verdict.message


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_a_failure_in_the_child_relays_its_own_reports(when: str) -> None:
    events = [
        report(w, "failed" if w == when else "passed")
        for w in ("setup", "call", "teardown")
        if w != "call" or when != "setup"
    ]
    record = [*run(*events)[:-1], {"event": "finish", "exitstatus": 1}]
    verdict = classify(NODE, record, ChildExit(1, None))
    assert verdict.kind == "failed" and verdict.relayed
    assert any(r["outcome"] == "failed" and r["when"] == when for r in verdict.reports)


SKIP = ["f", 1, "Skipped: why"]


@pytest.mark.parametrize(
    ("middle", "status", "kind"),
    [
        (
            (report("setup"), report("call", "skipped", longrepr=SKIP), report("teardown")),
            0,
            "skipped",
        ),
        ((report("setup", "skipped", longrepr=SKIP), report("teardown")), 0, "skipped"),
        (
            (report("setup"), report("call", "skipped", wasxfail="bug"), report("teardown")),
            0,
            "xfailed",
        ),
        ((report("setup"), report("call", wasxfail="bug"), report("teardown")), 0, "xpassed"),
        # strict: pytest makes the xpass a failure without `wasxfail`
        ((report("setup"), report("call", "failed"), report("teardown")), 1, "failed"),
        ((report("setup"), report("call"), report("teardown", "failed")), 1, "failed"),
        (
            (report("setup"), subtest(), subtest(), report("call"), report("teardown")),
            0,
            "passed",
        ),
        (
            (
                report("setup"),
                subtest(),
                subtest("failed"),
                report("call", "failed"),
                report("teardown"),
            ),
            1,
            "failed",
        ),
    ],
)
def test_every_outcome_is_relayed_as_the_child_reported_it(
    middle: tuple[dict[str, Any], ...], status: int, kind: str
) -> None:
    record = [*run(*middle)[:-1], {"event": "finish", "exitstatus": status}]
    verdict = classify(NODE, record, ChildExit(status, None))
    assert verdict.kind == kind and verdict.relayed
    assert list(verdict.reports) == [event["data"] for event in middle]
    # The same record with the other exit status is not believed.
    wrong = [*record[:-1], {"event": "finish", "exitstatus": 1 - status}]
    assert classify(NODE, wrong, ChildExit(1 - status, None)).kind == "exit status"


def test_a_damaged_record_is_not_a_pass() -> None:
    verdict = classify(NODE, PASSING, OK, damaged="line 3 is not JSON")
    assert verdict.kind == "damaged record"


def test_a_node_id_pytest_cannot_find_is_not_found() -> None:
    events = [
        {"event": "usage_error", "message": f"not found: {NODE}\n(no match)"},
        {"event": "finish", "exitstatus": 4},
    ]
    verdict = classify(NODE, events, ChildExit(4, None))
    assert verdict.kind == "not found"
    other = classify(NODE, [{"event": "usage_error", "message": "bad -o"}], ChildExit(4, None))
    assert other.kind == "exited before running" and "bad -o" in other.message
