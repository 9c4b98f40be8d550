"""The child side: run exactly one test with pytest, recording events for the parent.

Runs inside a process forked by the fork server (`run`), or as `python -m
buildtool.isolation.child REQUEST.json` (the spawn launcher). Either way the environment is set
before pytest starts, so every project module is first imported under the test's environment.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import NoReturn

# Exit code when the child's own machinery breaks (not pytest's: those are 0-5).
INTERNAL_ERROR = 70


@dataclass(frozen=True)
class ChildRequest:
    nodeid: str
    argv: tuple[str, ...]  # pytest arguments, the node id included
    cwd: str
    env: dict[str, str]  # the complete environment of the child
    requested_env: dict[str, str | None]  # what the marker asked for (for `isolated_env`)
    report_path: str
    output_path: str
    accelerators: tuple[str, ...] = ()  # those the parent checked and turned on (accelerators)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ChildRequest:
        data = json.loads(text)
        data["argv"] = tuple(data["argv"])
        data["accelerators"] = tuple(data.get("accelerators", ()))
        return cls(**data)


def prepare_process(request: ChildRequest) -> None:
    """The test's environment, working directory and output, before pytest reads any of it."""
    os.environ.clear()
    os.environ.update(request.env)
    os.chdir(request.cwd)
    random.seed()  # a forked child would otherwise repeat the server's random sequence
    # Line by line to the output file, so a child that dies keeps what it printed so far.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)


def run(request: ChildRequest) -> int:
    """Set up the process for the test, run pytest on it, return its exit status."""
    prepare_process(request)

    import pytest  # already imported in a fork-server child; cheap then

    from buildtool.isolation import prebuilt
    from buildtool.isolation.events import ChildReporter
    from buildtool.isolation.metadata_cache import EndOfStartup

    reporter = ChildReporter(
        request.report_path,
        request.nodeid,
        request.requested_env,
        own_call="own_call" in request.accelerators,
    )
    # Before pytest (and any conftest) can touch the environment: what the child started with.
    reporter.emit("hello", pid=os.getpid(), environ_names=sorted(os.environ))
    prebuilt.use(request.argv)  # a fork-server child: pytest's initial config is ready
    return int(pytest.main(list(request.argv), plugins=[reporter, EndOfStartup()]))


def exit_code_of(run_session: Callable[[], int]) -> int:
    """`run_session()`'s status; a `SystemExit`'s code; INTERNAL_ERROR if it raised."""
    try:
        return run_session()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else INTERNAL_ERROR
    except BaseException:
        traceback.print_exc()
        return INTERNAL_ERROR


def exit_now(code: int) -> NoReturn:
    """End a child process with `code`, its output flushed and nothing else run."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_and_exit(request: ChildRequest) -> NoReturn:
    """Never returns: a forked child must not fall back into the server's loop."""
    code = INTERNAL_ERROR
    try:
        code = exit_code_of(lambda: run(request))
    finally:
        exit_now(code)


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m buildtool.isolation.child REQUEST.json")
    with open(argv[0], encoding="utf-8") as fh:
        request = ChildRequest.from_json(fh.read())
    if "pyc_reader" in request.accelerators:
        from buildtool.isolation import pyc_reader

        pyc_reader.install()  # a forked child has it from its server
    run_and_exit(request)


if __name__ == "__main__":
    main(sys.argv[1:])
