"""The startup snapshot: children that fork with pytest's configuration already parsed.

Without it, half of a forked child's pytest session goes before its first conftest: arguments and
ini file parsed twice, packages marked for assertion rewriting, entry-point plugins registered
(their options added, their hooks checked). None of it runs project code unless a plugin is
named by `-p NAME` or `PYTEST_PLUGINS` (which could be a project module), and for one server
(one environment, one parent session) all of it is the same for every test but the node id and
the `--basetemp` directory.

So at its first request the fork server forks a snapshot process. That process runs pytest on
the request's arguments, exactly as a child would, up to `pytest_load_initial_conftests`, where
this module's outermost hook wrapper takes over and forks one child per request from there.
Each child takes the test's environment, directory and output as any child does, swaps its node
id and basetemp into the arguments, re-reads the early options from them, and lets pytest go
on: conftests, configure, collection and the test all run in the child, under its environment.
The child's reporter is registered where any child registers it, so the plugins, their order,
the options and the invocation parameters are those of a child started afresh
(`tests/buildtool/isolation/test_startup_reuse.py`).

The snapshot process hands a request back to the server (exit HANDBACK, the request's bytes on a
pipe), which then serves it and all later ones as before, if pytest would import a plugin while
parsing (it refuses before the import), if pytest stops before the hook (a usage error: the
child started afresh reports it), or if a request's arguments differ from the first one's in
anything but the node id and the basetemp.
"""

from __future__ import annotations

import copy
import gc
import os
import pathlib
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

import pytest
from pytest import Config, PytestPluginManager

from buildtool.isolation import prebuilt
from buildtool.isolation.child import (
    INTERNAL_ERROR,
    ChildRequest,
    exit_code_of,
    exit_now,
    prepare_process,
)
from buildtool.isolation.events import ChildReporter
from buildtool.isolation.metadata_cache import EndOfStartup

HANDBACK = 75  # exit status: the request on the hand-back pipe is the server's to serve
_resumed = False


class Requests(Protocol):
    def next(self) -> bytes: ...


def resumed() -> bool:
    """Whether this process is a test child that started from the snapshot."""
    return _resumed


def fits(template: tuple[str, ...], argv: tuple[str, ...]) -> bool:
    """`argv` differs from `template` in its node id (first) and basetemp at most."""
    if len(argv) != len(template) or not argv:
        return False
    for index, (mine, theirs) in enumerate(zip(template, argv, strict=True)):
        if index == 0 or mine == theirs:
            continue
        if not (mine.startswith("--basetemp=") and theirs.startswith("--basetemp=")):
            return False
    return True


def start(
    first: bytes,
    requests: Requests,
    relay: Callable[[int], bool],
    enter_child: Callable[[ChildRequest], None],
) -> bytes | None:
    """Serve from a snapshot process until the parent closes the pipe: None; or the request
    bytes it handed back, which the caller serves from then on."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _Snapshot(first, requests, relay, enter_child, write_end).run()
    os.close(write_end)
    handed_back = b""
    while chunk := os.read(read_end, 65536):
        handed_back += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == HANDBACK:
        return handed_back
    return None


class _Snapshot:
    def __init__(
        self,
        first: bytes,
        requests: Requests,
        relay: Callable[[int], bool],
        enter_child: Callable[[ChildRequest], None],
        handback_fd: int,
    ) -> None:
        self.line = first
        self.first = ChildRequest.from_json(first.decode())
        self.requests = requests
        self.relay = relay
        self.enter_child = enter_child
        self.handback_fd = handback_fd
        self.reporter = ChildReporter(
            self.first.report_path,
            self.first.nodeid,
            self.first.requested_env,
            own_call="own_call" in self.first.accelerators,
        )
        self.end_of_startup = EndOfStartup()
        self.import_plugin = PytestPluginManager.import_plugin

    def hand_back(self, line: bytes | None = None) -> NoReturn:
        os.write(self.handback_fd, line if line is not None else self.line)
        os._exit(HANDBACK)

    def run(self) -> NoReturn:
        original = self.import_plugin

        def import_plugin(
            manager: PytestPluginManager, modname: str, consider_entry_points: bool = False
        ) -> None:
            # Blocked, registered, or a module the server already imported (pytest's own
            # plugins, when `prebuilt` is off: the server checked none is a project module):
            # importing it runs no code. Anything else could be a project module: not here.
            imported = modname in sys.modules or f"_pytest.{modname}" in sys.modules
            if manager.is_blocked(modname) or manager.get_plugin(modname) is not None or imported:
                original(manager, modname, consider_entry_points)
                return
            self.hand_back()

        PytestPluginManager.import_plugin = import_plugin  # type: ignore[method-assign,assignment]
        prebuilt.use(self.first.argv)
        plugins = [self.reporter, self.end_of_startup, self]
        code = exit_code_of(lambda: int(pytest.main(list(self.first.argv), plugins=plugins)))
        if _resumed:
            exit_now(code)
        self.hand_back()  # pytest stopped before the conftests: a child started afresh says why

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_load_initial_conftests(
        self, early_config: Config, args: list[str], parser: pytest.Parser
    ) -> Any:
        template = list(self.first.argv)
        split = len(args) - len(template)
        if split < 0 or args[split:] != template:
            self.hand_back()
        PytestPluginManager.import_plugin = self.import_plugin  # type: ignore[method-assign]
        gc.collect()
        gc.freeze()  # what the parse built is shared by every child, never copied by the GC
        request, line = self.first, self.line
        while True:
            if not fits(self.first.argv, request.argv) or request.cwd != self.first.cwd:
                self.hand_back(line)
            pid = os.fork()
            if pid == 0:
                break
            line = self.requests.next() if self.relay(pid) else b""
            if not line:
                os._exit(0)  # the parent closed the pipe, or died
            request = ChildRequest.from_json(line.decode())
        self._become(request, early_config, args, args[:split], parser)
        return (yield)

    def _become(
        self,
        request: ChildRequest,
        config: Config,
        args: list[str],
        addopts: list[str],
        parser: pytest.Parser,
    ) -> None:
        """This process is now the test's child: its environment, output and arguments."""
        global _resumed
        _resumed = True
        try:
            os.close(self.handback_fd)
            self.enter_child(request)
            prepare_process(request)
            self.reporter.retarget(request.report_path, request.nodeid, request.requested_env)
            self.reporter.emit("hello", pid=os.getpid(), environ_names=sorted(os.environ))
            config.pluginmanager.unregister(self)
            args[:] = addopts + list(request.argv)
            config.invocation_params = Config.InvocationParams(
                args=request.argv,
                plugins=(self.reporter, self.end_of_startup),
                dir=pathlib.Path.cwd(),
            )
            # What `Config.parse` read from the arguments just before this hook.
            namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
            if namespace.confcutdir is None:
                parent = config.inipath.parent if config.inipath else config.rootpath
                namespace.confcutdir = str(parent)
            config.known_args_namespace = namespace
        except BaseException:
            traceback.print_exc()
            exit_now(INTERNAL_ERROR)
