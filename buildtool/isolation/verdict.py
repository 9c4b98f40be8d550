"""Decide, from the child's event record and how it ended, whether the one test really passed.

Pure: no processes, no files. A pass needs all of: the child collected exactly the parent's node
id and nothing else, ran its setup, call and teardown, each passed (not skipped, not xfail),
pytest finished the session with status 0 and the process exited 0 on its own.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from buildtool.isolation.events import Event

Kind = Literal[
    "passed",
    "failed",  # the test ran and failed (or errored) in the child: its own reports say why
    "timed out",
    "killed by signal",
    "damaged record",
    "collection error",
    "exited before running",
    "deselected",
    "not found",
    "several matched",
    "skipped",
    "xfailed",
    "xpassed",
    "several ran",
    "exited during the test",
    "exit status",
]


@dataclass(frozen=True)
class ChildExit:
    returncode: int | None  # exit code when the process exited on its own
    signal: int | None  # the signal that ended it
    timed_out: bool = False  # the parent killed it at its deadline
    timeout: float | None = None


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    message: str  # one line; empty when passed
    reports: tuple[dict[str, Any], ...] = field(default=())  # child reports to relay

    @property
    def passed(self) -> bool:
        return self.kind == "passed"


def signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return f"signal {number}"


def _skip_reason(report: dict[str, Any]) -> str:
    longrepr = report.get("longrepr")
    if isinstance(longrepr, list | tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or report.get("wasxfail") or "no reason given")


def _phase(events: Sequence[Event], nodeid: str) -> str:
    """How far the child got, for messages about a child that did not finish."""
    whens = [
        e["data"].get("when")
        for e in events
        if e.get("event") == "report" and e["data"].get("nodeid") == nodeid
    ]
    if not any(e.get("event") == "collected" for e in events):
        return "before collection finished"
    if not any(e.get("event") == "start" for e in events):
        return "before the test started"
    if "setup" not in whens:
        return "during setup"
    if "call" not in whens:
        return "during the call phase"
    if "teardown" not in whens:
        return "during teardown"
    return "after the test, before pytest finished"


def _exit_text(child: ChildExit) -> str:
    if child.signal is not None:
        return f"signal {signal_name(child.signal)}"
    return f"exit status {child.returncode}"


def classify(
    nodeid: str, events: Sequence[Event], child: ChildExit, damaged: str | None = None
) -> Verdict:
    def fail(kind: Kind, message: str) -> Verdict:
        return Verdict(kind, message)

    if child.timed_out:
        limit = f"{child.timeout:g} s" if child.timeout is not None else "its deadline"
        return fail("timed out", f"timed out after {limit} {_phase(events, nodeid)}; killed")
    if child.signal is not None:
        return fail(
            "killed by signal",
            f"killed by signal {signal_name(child.signal)} {_phase(events, nodeid)}",
        )
    if damaged:
        return fail("damaged record", damaged)

    errors = [e for e in events if e.get("event") == "collect_error"]
    if errors:
        where = ", ".join(repr(e.get("nodeid") or "<session>") for e in errors)
        return fail("collection error", f"collection error in the child at {where}")

    usage = [str(e.get("message", "")) for e in events if e.get("event") == "usage_error"]
    if usage and usage[-1].startswith("not found"):
        return fail("not found", f"the child found no test with node id {nodeid}: {usage[-1]}")
    if usage:
        return fail("exited before running", f"the child's pytest refused to run: {usage[-1]}")
    collected_events = [e for e in events if e.get("event") == "collected"]
    if not collected_events:
        return fail(
            "exited before running",
            f"exited before running the test ({_phase(events, nodeid)}, {_exit_text(child)})",
        )
    collected = [str(n) for n in collected_events[-1].get("nodeids", [])]
    deselected = {str(n) for e in events if e.get("event") == "deselected" for n in e["nodeids"]}
    if not collected:
        if nodeid in deselected:
            return fail("deselected", f"the child deselected {nodeid}")
        return fail("not found", f"the child found no test with node id {nodeid}")
    if len(collected) > 1:
        shown = ", ".join(collected[:10]) + (" ..." if len(collected) > 10 else "")
        return fail(
            "several matched", f"{len(collected)} tests matched {nodeid} in the child: {shown}"
        )
    if collected != [nodeid]:
        return fail("not found", f"the child collected {collected[0]} instead of {nodeid}")

    reports = [e["data"] for e in events if e.get("event") == "report"]
    calls = [r for r in reports if r.get("when") == "call"]
    if len(calls) > 1:
        return fail("several ran", f"{len(calls)} call phases ran in the child")
    mine = {r.get("when"): r for r in reports if r.get("nodeid") == nodeid}
    setup, call, teardown = mine.get("setup"), mine.get("call"), mine.get("teardown")
    relay = tuple(r for r in (setup, call, teardown) if r is not None)

    if setup is None:
        return fail(
            "exited before running",
            f"exited before running the test ({_phase(events, nodeid)}, {_exit_text(child)})",
        )
    if setup.get("outcome") == "failed":
        return Verdict("failed", "error in setup (in the child)", relay)
    for report in (setup, call):
        if report is None:
            continue
        outcome, xfail = report.get("outcome"), report.get("wasxfail")
        if outcome == "skipped":
            if xfail is not None:
                return fail("xfailed", f"xfailed in the child: {_skip_reason(report)}")
            return fail("skipped", f"skipped in the child: {_skip_reason(report)}")
        if outcome == "failed":
            return Verdict("failed", "failed (in the child)", relay)
        if outcome == "passed" and xfail is not None:
            return fail("xpassed", f"unexpectedly passed an xfail test in the child: {xfail}")
    if call is None:
        return fail(
            "exited during the test",
            f"exited without reporting a call phase ({_phase(events, nodeid)}, "
            f"{_exit_text(child)})",
        )
    if teardown is None:
        return fail(
            "exited during the test",
            f"exited before its teardown reported ({_phase(events, nodeid)}, {_exit_text(child)})",
        )
    if teardown.get("outcome") == "failed":
        return Verdict("failed", "error in teardown (in the child)", relay)
    finish = [e for e in events if e.get("event") == "finish"]
    if not finish:
        return fail(
            "exited during the test",
            f"exited after the test before pytest finished ({_exit_text(child)})",
        )
    status = int(finish[-1].get("exitstatus", -1))
    if status != 0 or child.returncode != 0:
        return fail(
            "exit status",
            f"the test passed but the child's pytest finished with status {status} and the "
            f"process with {_exit_text(child)}",
        )
    return Verdict("passed", "", relay)
