"""`buildtool cache-build` and `buildtool stamp`: argument parsing, messages, exit codes."""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from buildtool.cache.command import check_command
from buildtool.cache.config import CacheConfig
from buildtool.cache.errors import EXIT_OWN_ERROR, CacheError
from buildtool.cache.lock import check_timeout
from buildtool.cache.scan import default_jobs
from buildtool.cache.session import CacheSession, Outcome, dry_run
from buildtool.fsutil import show

PROG = "buildtool cache-build"


def _say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", required=True, help="root of the build inputs")
    parser.add_argument(
        "--cache", required=True, help="cache folder holding the outputs and the stamp"
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="not an input: a name at any depth, or a path with '/'; trailing '/' = folders only",
    )
    parser.add_argument(
        "--artifacts",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder of build outputs whose mtimes the stamp time must pass",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="build in a copy under the cache folder; never touch the workspace's mtimes",
    )
    parser.add_argument("--jobs", type=int, default=0, help="hashing processes (default: cores)")


def register(subparsers: Any) -> None:
    build = subparsers.add_parser(
        "cache-build",
        help="hash inputs, stamp the cache, align mtimes, run COMMAND",
        description="Content-stamp build cache: see docs/build-cache.md.",
    )
    _add_common(build)
    build.add_argument(
        "--clean-on-removal",
        action="append",
        default=[],
        metavar="PATH",
        help="derived outputs to clear when an input path disappeared (deletes, renames)",
    )
    build.add_argument(
        "--lock-timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="give up (exit 2) after waiting this long for the cache lock",
    )
    build.add_argument("--dry-run", action="store_true", help="print the decision, change nothing")
    build.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    build.set_defaults(func=run_cache_build)
    stamp = subparsers.add_parser(
        "stamp", help="print what cache-build would decide", description=dry_run.__doc__
    )
    _add_common(stamp)
    stamp.set_defaults(func=run_stamp, clean_on_removal=[], lock_timeout=0.0, command=[])


def _config(args: argparse.Namespace) -> CacheConfig:
    def absolute(path: str, what: str) -> bytes:
        if not path:
            raise CacheError(f"{what}: empty path")
        return os.path.realpath(os.fsencode(path))

    if args.jobs < 0:
        raise CacheError(f"--jobs {args.jobs}: must be 0 (all cores) or more")
    check_timeout("--lock-timeout", args.lock_timeout)
    for glob in args.exclude:
        if not glob.strip("/").removeprefix("./"):
            raise CacheError(f"--exclude {glob!r}: empty pattern")
    return CacheConfig(
        workspace=absolute(args.workspace, "--workspace"),
        cache=absolute(args.cache, "--cache"),
        excludes=tuple(args.exclude),
        clean_on_removal=tuple(os.fsencode(p) for p in args.clean_on_removal),
        artifact_dirs=tuple(absolute(p, "--artifacts") for p in args.artifacts),
        local=args.local,
        jobs=args.jobs or default_jobs(),
        lock_timeout=args.lock_timeout,
        progress=sys.stderr.isatty(),
    )


def _when(seconds: int) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def report(outcome: Outcome) -> str:
    """The concise dry-run / stamp report."""
    d = outcome.decision
    state = f"changed ({d.reason})" if d.changed else "unchanged"
    return (
        f"{state}\n"
        f"digest      {outcome.digest}\n"
        f"stamp time  {d.stamp_time} ({_when(d.stamp_time)})\n"
        f"files       {outcome.hashed} hashed ({outcome.bytes_hashed} bytes), "
        f"{outcome.aligned} to align, {len(outcome.skipped)} skipped\n"
    )


def _warn_skipped(outcome: Outcome) -> None:
    for item in outcome.skipped:
        _say(f"warning: skipped {item.what} {show(item.path)} (not an input)")


def _guarded(body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return body(args)
        except CacheError as exc:
            _say(f"error: {exc}")
            return EXIT_OWN_ERROR
        except ValueError as exc:  # a bad --exclude pattern
            _say(f"error: {exc}")
            return EXIT_OWN_ERROR
        except KeyboardInterrupt:
            _say("interrupted")
            return 128 + signal.SIGINT

    return run


@_guarded
def run_stamp(args: argparse.Namespace) -> int:
    outcome, busy = dry_run(_config(args))
    _warn_skipped(outcome)
    sys.stdout.write(report(outcome))
    if busy:
        _say("note: a build holds the cache lock right now")
    return 0


def _set_parent_death_signal() -> None:
    """In the child: die with the helper, so a killed helper leaves no build writing on."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: nothing to arrange
        pass


def _execute(command: Sequence[str], cwd: bytes) -> int:
    """Run COMMAND; forward SIGTERM/SIGHUP; a terminal's SIGINT reaches it directly."""
    try:
        child = subprocess.Popen(list(command), cwd=cwd, preexec_fn=_set_parent_death_signal)
    except FileNotFoundError as exc:
        raise CacheError(f"command not found: {command[0]}") from exc
    except PermissionError as exc:
        raise CacheError(f"command not executable: {command[0]}") from exc

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue  # the child got the same SIGINT; its status decides
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@_guarded
def run_cache_build(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    config = _config(args)
    if args.dry_run:
        return run_stamp(args)
    if not command:
        raise CacheError("missing COMMAND: buildtool cache-build [options] -- COMMAND [ARGS...]")
    # before anything is written: a command that cannot run must leave stamp and mtimes alone
    # (local mode runs it in a copy of the workspace, so a relative path is checked there)
    check_command(command, config.workspace, os.environ.get("PATH"))
    session = CacheSession(config, _say)
    with session as outcome:
        _warn_skipped(outcome)
        d = outcome.decision
        state = f"changed ({d.reason})" if d.changed else "unchanged"
        cleaned = f", cleared {len(outcome.cleaned)} output folder(s)" if outcome.cleaned else ""
        where = f", building in {show(outcome.build_dir)}" if config.local else ""
        _say(
            f"{state}, stamp time {d.stamp_time}: {outcome.hashed} inputs hashed, "
            f"{outcome.aligned} aligned{cleaned}{where}"
        )
        status = _execute(command, outcome.build_dir)
        # killed by a signal: it may have left half-written outputs, keep the marker
        session.finish(completed=status >= 0, succeeded=status == 0)
    return status if status >= 0 else 128 - status
