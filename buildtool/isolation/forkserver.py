"""The fork server: a warm Python process per environment that forks one child per test.

Started by the parent (`python -m buildtool.isolation.forkserver`) with the test's environment,
it imports pytest and the installed pytest plugins by running a throw-away session in an empty
directory (so plugin modules are assertion-rewritten once, here), imports the configured
third-party modules, and then never imports a project module: each forked child imports those
itself, under its own environment. It stays single-threaded (forking a threaded process is
unsafe) and says so, or refuses to start.

Protocol, one JSON object per line: the server says `{"ready": ...}` or `{"error": ...}`; then per
request (a `ChildRequest`) it answers `{"pid": N}` when the child is forked and `{"status": S}`
(the raw wait status) when it has ended.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.util
import io
import json
import os
import select
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

from buildtool.isolation import fixture_scan, metadata_cache, prebuilt, pyc_reader, snapshot
from buildtool.isolation.child import ChildRequest, run_and_exit

_WARMUP_TEST = """
def test_warmup(tmp_path, monkeypatch, capsys, request):
    monkeypatch.setattr("os.sep", "/")
    (tmp_path / "x").write_text("x")
    print("warm")
    assert capsys.readouterr().out == "warm\\n"
"""


def _send(fd: int, **message: Any) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _installed_prefixes() -> tuple[Path, ...]:
    return tuple({Path(p).resolve() for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)})


def _is_project_file(path: str | None, root: Path) -> bool:
    """A file of the project under test (not of the interpreter or its installed packages)."""
    if not path:
        return False
    resolved = Path(path).resolve()
    if any(resolved.is_relative_to(prefix) for prefix in _installed_prefixes()):
        return False
    return resolved.is_relative_to(root)


def _allowed_here(name: str) -> bool:
    # The plugin itself is loaded by every pytest session; it reads no settings at import.
    # `__main__` is this module, run with -m.
    if name in ("__main__", "buildtool", "buildtool.isolation"):
        return True
    return name.startswith("buildtool.isolation.")


def project_modules(root: Path) -> list[str]:
    """Modules of the project under test that this process has imported."""
    found = []
    for name, module in list(sys.modules.items()):
        if _allowed_here(name):
            continue
        if _is_project_file(getattr(module, "__file__", None), root):
            found.append(name)
    return sorted(found)


def warm_up() -> None:
    """Run a throw-away pytest session: imports (and assertion-rewrites) pytest and its plugins."""
    import pytest

    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="isolated-warmup-") as tmp:
        Path(tmp, "pytest.ini").write_text("[pytest]\n")
        Path(tmp, "test_warmup.py").write_text(_WARMUP_TEST)
        os.chdir(tmp)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                status = pytest.main(
                    [tmp, "-q", "-p", "no:cacheprovider", f"--basetemp={tmp}/basetemp"]
                )
        finally:
            os.chdir(cwd)
        if status != 0:
            raise RuntimeError(f"the warm-up pytest session failed with status {status}")
        for name in set(sys.modules) - saved_modules:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(tmp):
                del sys.modules[name]
    sys.path[:] = saved_path


def preload(names: list[str], root: Path) -> None:
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ImportError(f"isolated_preload: no module named {name!r}")
        if _is_project_file(spec.origin, root):
            raise ValueError(
                f"isolated_preload: {name!r} is a project module ({spec.origin}); the fork "
                "server must never import project modules (they read settings at import)"
            )
        importlib.import_module(name)


class _Requests:
    """Request lines from the parent, read in chunks (an unbuffered readline costs one system
    call per byte: most of a millisecond per request). The parent sends a request only when
    the previous child has ended, so nothing is ever held here while a child runs: the request
    pipe becoming readable then still means only one thing, end of file (see `wait_child`)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""

    def next(self) -> bytes:
        """The next line; b"" at end of file (a last line without its newline is not a request)."""
        while b"\n" not in self._buffer:
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line + b"\n"

    def push_back(self, data: bytes) -> None:
        """Read `data` again first (what the snapshot process handed back)."""
        self._buffer = data + self._buffer


def serve(
    proto_in: int, proto_out: int, use_snapshot: bool, accelerators: set[str] | None = None
) -> None:
    prebuild = accelerators is None or "prebuilt" in accelerators
    requests = _Requests(proto_in)

    def relay(pid: int) -> bool:
        """Report the forked child and how it ended; False if the parent is gone."""
        _send(proto_out, pid=pid)
        status = wait_child(pid, proto_in)
        kill_leftovers(pid)
        if status is None:
            return False  # the parent is gone: so is its test
        _send(proto_out, pid=pid, status=status)
        return True

    def enter_child(request: ChildRequest) -> None:
        _enter_child(request, proto_in, proto_out)

    while True:
        line = requests.next()
        if not line:
            return  # the parent closed the pipe (finished or died): nothing left to do
        request = ChildRequest.from_json(line.decode())
        if prebuild and prebuilt.prepare(request.argv):
            gc.freeze()  # the new objects too: children neither scan nor copy them
        sys.stdout.flush()
        sys.stderr.flush()
        if use_snapshot:
            use_snapshot = False  # one try: what it hands back is served from here
            handed_back = snapshot.start(line, requests, relay, enter_child)
            if handed_back is None:
                return  # it served until the parent closed the pipe (or it died: so do we)
            requests.push_back(handed_back)
            continue
        pid = os.fork()
        if pid == 0:
            _enter_child(request, proto_in, proto_out)
            run_and_exit(request)
        if not relay(pid):
            return


def wait_child(pid: int, proto_in: int) -> int | None:
    """The child's wait status; None (child killed) if the parent went away meanwhile.

    The parent sends nothing while a child runs, so the request pipe becoming readable means
    end of file: the parent died (its deadline died with it), and a hung test must not keep
    running forever as an orphan.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return os.waitpid(pid, 0)[1]
    try:
        pidfd = pidfd_open(pid)
    except OSError:
        return os.waitpid(pid, 0)[1]
    try:
        while True:
            ready, _, _ = select.select([pidfd, proto_in], [], [])
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
            if proto_in in ready:
                kill_leftovers(pid)
                os.waitpid(pid, 0)
                return None
    finally:
        os.close(pidfd)


def kill_leftovers(pgid: int) -> None:
    """Processes a finished test left running in its process group do not outlive it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _enter_child(request: ChildRequest, proto_in: int, proto_out: int) -> None:
    """A forked child's own process group and output file; no way back to the protocol."""
    try:
        os.setsid()  # own process group: a timeout kills the test and anything it started
        os.close(proto_in)
        os.close(proto_out)
        out = os.open(request.output_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except BaseException:
        traceback.print_exc()
        os._exit(70)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m buildtool.isolation.forkserver")
    parser.add_argument("--project-root", required=True, type=Path)
    parser.add_argument("--preload", action="append", default=[])
    parser.add_argument("--no-snapshot", action="store_true", help="never fork from a snapshot")
    parser.add_argument(
        "--accelerators", default="", help="comma-separated accelerators to use (checked)"
    )
    args = parser.parse_args(argv)
    # The protocol gets private descriptors; fd 0/1 become /dev/null and the log (stderr), so
    # nothing printed by pytest or a plugin can corrupt it.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    root = args.project_root.resolve()
    # Only those the parent checked (accelerators.select) and asked for.
    use = set(filter(None, args.accelerators.split(",")))
    try:
        if "pyc_reader" in use:
            pyc_reader.install()  # every child imports its rewritten modules afresh
        if "metadata_cache" in use:
            metadata_cache.install()  # the warm-up session fills it; children start from it
        if "fixture_scan" in use:
            fixture_scan.learn()  # so is this one
        warm_up()
        fixture_scan.stop_learning()
        preload(args.preload, root)
        imported = project_modules(root)
        if imported:
            raise RuntimeError(f"the fork server imported project modules: {imported}")
        threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        if threads:
            raise RuntimeError(
                f"the fork server has threads {threads} (a preloaded module started them); "
                "forking a threaded process is unsafe: drop that preload or use "
                "--isolated-launcher=spawn"
            )
    except BaseException as exc:
        summary = " ".join(str(exc).split()) or type(exc).__name__
        _send(proto_out, error=summary, detail="\n" + traceback.format_exc())
        sys.exit(1)
    gc.collect()
    gc.freeze()  # children then neither scan nor copy the server's objects on collection
    _send(proto_out, ready=True, pid=os.getpid(), modules=len(sys.modules))
    # PYTEST_DEBUG traces to the process that parses: the snapshot would trace to this log.
    snapshot_on = "snapshot" in use and not args.no_snapshot
    serve(proto_in, proto_out, snapshot_on and not os.environ.get("PYTEST_DEBUG"), use)


if __name__ == "__main__":
    main()
