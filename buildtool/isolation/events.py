"""The child's structured record of its pytest session: one JSON object per line.

The child writes (and flushes) an event at each step, so a child that dies midway leaves a
record of how far it got; the parent decides from these events, never from the exit code alone.

Events (`"event"` key): `hello` (pid, environment names), `collect_error` (nodeid,
longrepr), `deselected` (nodeids), `usage_error` (message, e.g. node id not found), `collected`
(nodeids, after every plugin's selection), `start` (nodeid), `report` (a serialized
TestReport), `finish` (exitstatus).
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

Event = dict[str, Any]
CHILD_PLUGIN_NAME = "isolated-child-reporter"


class ChildReporter:
    """Registered in the child's pytest session; records what ran, never changes outcomes.

    It also refuses to run anything but the one expected test: when selection yields other or
    several tests, it records them and runs none (the parent reports which). Of a parametrized
    function it has pytest build only the calls named by the node id (`keep_only_the_test`).
    """

    def __init__(
        self, report_path: str, nodeid: str, env: dict[str, str | None], own_call: bool = False
    ) -> None:
        self.nodeid = nodeid
        self.own_call = own_call  # the `own_call` accelerator (keep_only_the_test)
        self.env = env  # the test's requested env (for the `isolated_env` fixture)
        self._path = report_path
        self._config: pytest.Config | None = None
        self._session: pytest.Session | None = None

    def retarget(self, report_path: str, nodeid: str, env: dict[str, str | None]) -> None:
        """Record another test instead (a child of the startup snapshot takes the reporter the
        snapshot registered, so the plugin order is that of any other child)."""
        self.nodeid, self.env, self._path = nodeid, env, report_path

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, "t": time.time(), **fields}, default=repr) + "\n"
        # Append + close per event: the record survives any way the child may die afterwards.
        with open(self._path, "a", encoding="utf-8") as fh:
            fh.write(line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """Skip the directories and files beside the path to the test's file.

        pytest walks from the rootdir down to the file the node id names, making a node for
        every entry of each directory on the way, then keeps only the one on the path; the
        others are never imported or collected. Skipping them early changes nothing but the
        time (tens of entries in a real tree). Anything inside a directory given whole, or
        not directly beside the path, is left to pytest.
        """
        session = self._session
        if session is None or session.isinitpath(collection_path, with_parents=True):
            return None
        parent = collection_path.parent
        if session.isinitpath(parent) or not session.isinitpath(parent, with_parents=True):
            return None
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> Generator[None, object, object]:
        result = yield
        if self.own_call:
            keep_only_the_test(metafunc, self.nodeid)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self) -> Generator[None, object, object]:
        try:
            return (yield)
        except pytest.UsageError as exc:  # e.g. "not found: <node id>"
            self.emit("usage_error", message=str(exc))
            raise

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.emit("collect_error", nodeid=report.nodeid, longrepr=str(report.longrepr))

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.emit("deselected", nodeids=[item.nodeid for item in items])

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        nodeids = [item.nodeid for item in items]
        self.emit("collected", nodeids=nodeids)
        if nodeids != [self.nodeid]:
            items[:] = []

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.emit("start", nodeid=nodeid)

    @pytest.hookimpl(trylast=True)  # after the terminal's status hooks have had their say
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        assert self._config is not None
        data = self._config.hook.pytest_report_to_serializable(config=self._config, report=report)
        self.emit("report", data=data)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self.emit("finish", exitstatus=int(exitstatus))


def keep_only_the_test(metafunc: pytest.Metafunc, nodeid: str) -> None:
    """Of a parametrized function's calls, only those named `nodeid` become test items.

    pytest would build an item for every call, then keep the ones the node id names: for a
    test parametrized hundreds of ways, most of the child's collection. The calls' names are
    made as pytest makes them; when none has the node id's name, all are kept, so a node id
    that matches none or several of them is still reported as such.
    """
    definition = metafunc.definition.nodeid
    if nodeid != definition and not nodeid.startswith(definition + "["):
        return  # another function of the module
    calls: Any = getattr(metafunc, "_calls", None)
    if not isinstance(calls, list) or not calls:
        return
    base = metafunc.definition.name
    wanted_name = base + nodeid[len(definition) :]

    def name(call: Any) -> str:
        return f"{base}[{call.id}]" if getattr(call, "_idlist", True) else base

    try:
        wanted = [call for call in calls if name(call) == wanted_name]
    except AttributeError:  # another pytest: build them all, as pytest does
        return
    if wanted:
        calls[:] = wanted


def read_events(path: Path) -> tuple[list[Event], str | None]:
    """The events a child wrote, and a description of a damaged record (None when intact)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], None
    events: list[Event] = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            return events, f"line {number} of the child's event record is not JSON: {line[:200]!r}"
        if isinstance(value, dict):
            events.append(value)
    return events, None
