"""Decide, from the child's event record and how it ended, what the one test's outcome was.

Pure: no processes, no files. The child's own reports are relayed (whatever their outcome:
passed, failed, skipped, xfailed, xpassed, errors in setup or teardown, subtests) only when the
record proves the child ran exactly this test, all of it: the child collected exactly the
parent's node id and nothing else; every report it wrote is this test's; setup, at most one
call and teardown each reported once (a call unless setup failed or skipped); pytest finished
the session with the status those reports imply (1 when one failed, else 0) and the process
exited with that status on its own. Anything else is a failure of its own kind.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from buildtool.isolation.events import Event

# What a child's relayed reports add up to (as pytest's terminal would name the test).
Outcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed"]
RELAYED: tuple[Outcome, ...] = ("passed", "failed", "skipped", "xfailed", "xpassed")

Kind = Literal[
    Outcome,
    "timed out",
    "killed by signal",
    "damaged record",
    "collection error",
    "exited before running",
    "deselected",
    "not found",
    "several matched",
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

    @property
    def relayed(self) -> bool:
        """The child ran exactly this test: its reports stand as the test's outcome."""
        return self.kind in RELAYED


def signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return f"signal {number}"


def is_subtest(report: dict[str, Any]) -> bool:
    """A subtest's report (pytest's `subtests` fixture, unittest's `subTest`): a call-phase
    report of its own, counted as a subtest, not as another run of the test."""
    return report.get("_report_type") == "SubTestReport"


def counts_as_failure(report: dict[str, Any]) -> bool:
    """Whether pytest's session counts the report as a failure (its exit status is then 1)."""
    return report.get("outcome") == "failed" and "wasxfail" not in report


def outcome_of(reports: Sequence[dict[str, Any]]) -> Outcome:
    """What the test's reports add up to, as pytest's terminal names a test."""
    if any(counts_as_failure(r) for r in reports):
        return "failed"
    for report in reports:
        if "wasxfail" in report and not is_subtest(report):
            return "xfailed" if report.get("outcome") == "skipped" else "xpassed"
    if any(r.get("outcome") == "skipped" and not is_subtest(r) for r in reports):
        return "skipped"
    return "passed"


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
    others = sorted({str(r.get("nodeid")) for r in reports if r.get("nodeid") != nodeid})
    if others:
        return fail("several ran", f"the child also reported on {', '.join(others[:10])}")
    phases = [r for r in reports if not is_subtest(r)]
    whens = [r.get("when") for r in phases]
    calls = whens.count("call")
    if calls > 1:
        return fail("several ran", f"{calls} call phases ran in the child")
    if whens.count("setup") > 1 or whens.count("teardown") > 1:
        return fail("several ran", f"the child reported the phases {whens}")
    mine = {r.get("when"): r for r in phases}
    setup, call, teardown = mine.get("setup"), mine.get("call"), mine.get("teardown")
    if setup is None:
        return fail(
            "exited before running",
            f"exited before running the test ({_phase(events, nodeid)}, {_exit_text(child)})",
        )
    if call is None and setup.get("outcome") == "passed":
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
    finish = [e for e in events if e.get("event") == "finish"]
    if not finish:
        return fail(
            "exited during the test",
            f"exited after the test before pytest finished ({_exit_text(child)})",
        )
    status = int(finish[-1].get("exitstatus", -1))
    expected = 1 if any(counts_as_failure(r) for r in reports) else 0
    if status != expected or child.returncode != expected:
        return fail(
            "exit status",
            f"the test's reports mean exit status {expected}, but the child's pytest finished "
            f"with status {status} and the process with {_exit_text(child)}",
        )
    return Verdict(outcome_of(reports), "", tuple(reports))
