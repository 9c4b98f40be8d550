"""`classify`: a pass needs the whole record; every other shape is a named failure kind."""

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
            run(report("setup"), report("call", "skipped", longrepr=["f", 1, "Skipped: why"])),
            OK,
            "skipped",
            "Skipped: why",
        ),
        (
            run(report("setup", "skipped", longrepr=["f", 1, "Skipped: fixture"])),
            OK,
            "skipped",
            "fixture",
        ),
        (
            run(report("setup"), report("call", "skipped", wasxfail="known bug")),
            OK,
            "xfailed",
            "in the child",
        ),
        (
            run(report("setup"), report("call", wasxfail="known bug"), report("teardown")),
            OK,
            "xpassed",
            "known bug",
        ),
        (
            run(report("setup"), report("call"), report("call", nodeid=NODE + "x")),
            OK,
            "several ran",
            "2 call phases",
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
        if w == "setup" or when != "setup"
    ]
    verdict = classify(NODE, run(*events), ChildExit(1, None))
    assert verdict.kind == "failed"
    assert any(r["outcome"] == "failed" and r["when"] == when for r in verdict.reports)


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
