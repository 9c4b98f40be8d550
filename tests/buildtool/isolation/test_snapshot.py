"""The fork server's startup snapshot: which requests it serves, what it hands back, and that
it never imports a plugin (a project module, perhaps) while parsing."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

from buildtool.isolation import snapshot
from buildtool.isolation.child import ChildRequest
from buildtool.isolation.launch import ForkServer

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

ARGV = ("/p/test_a.py::test_x", "--rootdir=/p", "-p", "no:cacheprovider", "--basetemp=/t/1")


@pytest.mark.parametrize(
    ("argv", "fits"),
    [
        (ARGV, True),
        (("/p/test_b.py::test_y[1]", *ARGV[1:4], "--basetemp=/t/2"), True),
        ((*ARGV, "-v"), False),  # one more option
        ((*ARGV[:3], "no:junitxml", ARGV[4]), False),  # another plugin blocked
        (("/p/test_a.py::test_x", "--rootdir=/q", *ARGV[2:]), False),
        ((), False),
    ],
)
def test_a_request_fits_the_snapshot_when_only_node_id_and_basetemp_differ(
    argv: tuple[str, ...], fits: bool
) -> None:
    assert snapshot.fits(ARGV, argv) is fits


PROBE_TEST = """
import json, os
from buildtool.isolation import snapshot

def test_x():
    with open(os.environ["PROBE_OUT"], "a") as fh:
        fh.write(json.dumps([os.getpid(), snapshot.resumed()]) + "\\n")
"""


def _request(root: Path, n: int, out: Path, *extra: str) -> ChildRequest:
    testdir = root / f"run{n}"
    testdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "TMPDIR")}
    env["PROBE_OUT"] = str(out)
    nodeid = "test_probe.py::test_x"
    argv = (
        str(root / nodeid),
        f"--rootdir={root}",
        "-c",
        str(root / "pytest.ini"),
        "-p",
        "no:cacheprovider",
        "-q",
        f"--basetemp={testdir / 'basetemp'}",
        *extra,
    )
    return ChildRequest(
        nodeid, argv, str(root), env, {}, str(testdir / "events"), str(testdir / "output")
    )


def test_fitting_requests_start_from_the_snapshot_and_a_misfit_is_handed_back(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_probe.py").write_text(PROBE_TEST)
    out = tmp_path / "probe.jsonl"
    root = Path(__file__).resolve().parents[3]
    server = ForkServer(
        {**os.environ}, str(tmp_path), tmp_path / "server.log", root, [], [], snapshot=True
    )
    try:
        extras: list[tuple[str, ...]] = [(), (), ("-p", "no:junitxml"), (), ()]
        for n, extra in enumerate(extras):
            request = _request(tmp_path, n, out, *extra)
            ended = server.run(request, timeout=120)
            output = Path(request.output_path).read_text()
            assert ended.returncode == 0, output
    finally:
        server.close()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # The two fitting requests from the snapshot; the misfit, and everything after it, from
    # the server itself (it takes the misfit back and does not try again).
    assert [resumed for _, resumed in records] == [True, True, False, False, False]
    assert len({pid for pid, _ in records}) == 5


def test_a_plugin_to_import_is_left_to_each_child(pytester: pytest.Pytester) -> None:
    pids = pytester.path / "imported.txt"
    pytester.makepyfile(
        localplug=f"import os\nwith open({str(pids)!r}, 'a') as fh:\n"
        "    fh.write(f'{os.getpid()}\\n')\n"
    )
    pytester.makeini("[pytest]\npythonpath = .\naddopts = -p localplug\nisolated_timeout = 120\n")
    pytester.makepyfile(
        test_many="""
import os, pytest
from buildtool.isolation import snapshot

@pytest.mark.isolated(env={"SNAPSHOT_PROBE": "1"})
@pytest.mark.parametrize("n", range(3))
def test_child(n):
    assert not snapshot.resumed()  # the snapshot handed its request back
    with open(os.environ["PIDS"], "a") as fh:
        fh.write(f"child {os.getpid()}\\n")
""".replace('"1"}', f'"1", "PIDS": {str(pids)!r}}}')
    )
    sys.modules.pop("localplug", None)
    try:
        rec = pytester.inline_run("--isolated-launcher=forkserver")
    finally:
        sys.modules.pop("localplug", None)
    rec.assertoutcome(passed=3)
    lines = pids.read_text().split()
    children = {int(pid) for word, pid in itertools.pairwise(lines) if word == "child"}
    imported = {int(word) for word in lines if word.isdigit()} - children
    # Imported by this (the parent) process and by each child, never by a server process.
    assert imported == {os.getpid()}
    assert len(children) == 3
