"""The command line: exit codes, own errors naming the path, dry run, lock waiting."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cache_support import HELPER, helper_cmd, leftovers, mtimes, run_helper, write


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "src" / "a.txt", "alpha\n", mtime=1_000_000)
    write(root / "Makefile", "all:\n\t@true\n", mtime=1_000_000)
    return root


def test_exit_status_is_the_commands(ws: Path, tmp_path: Path) -> None:
    done = run_helper(ws, tmp_path / "c", ["sh", "-c", "exit 7"], check=False)
    assert done.returncode == 7
    killed = run_helper(ws, tmp_path / "c", ["sh", "-c", "kill -9 $$"], check=False)
    assert killed.returncode == 128 + 9
    ok = run_helper(ws, tmp_path / "c", ["sh", "-c", 'pwd; echo args: "$@"', "sh", "--", "-x"])
    assert ok.stdout.splitlines() == [str(ws), "args: -- -x"]


def test_command_runs_after_stamp_and_alignment(ws: Path, tmp_path: Path) -> None:
    script = 'cat "$1"/.buildtool/stamp | grep "^time"; stat -c %Y src/a.txt'
    done = run_helper(ws, tmp_path / "c", ["sh", "-c", script, "sh", str(tmp_path / "c")])
    stamp_line, mtime = done.stdout.split()[-2:], done.stdout.split()[-1]
    assert stamp_line[0] == mtime != "1000000"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workspace", "{tmp}/missing", "--cache", "{tmp}/c"], "{tmp}/missing"),
        (["--workspace", "{ws}", "--cache", "{ws}/src/a.txt"], "{ws}/src/a.txt"),
        (["--workspace", "{ws}", "--cache", "{ws}"], "{ws}"),
        (["--workspace", "{ws}/src", "--cache", "{ws}"], "{ws}/src"),
        (["--workspace", "{ws}", "--cache", "{tmp}/c", "--exclude", "/"], "--exclude"),
        (["--workspace", "{ws}", "--cache", "{tmp}/c", "--jobs", "-1"], "--jobs"),
        (
            ["--workspace", "{ws}", "--cache", "{tmp}/c", "--clean-on-removal", "src"],
            "--clean-on-removal src",
        ),
        (["--workspace", "{ws}", "--cache", "{tmp}/c", "--clean-on-removal", "."], "--clean"),
        (["--workspace", "{ws}", "--cache", "{tmp}/c", "--clean-on-removal", "/etc"], "/etc"),
    ],
)
def test_own_errors_exit_2_naming_the_culprit(
    ws: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(tmp=tmp_path, ws=ws) for a in args]
    before = mtimes(ws)
    done = subprocess.run(
        [*HELPER, *filled, "--", "true"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert message.format(tmp=tmp_path, ws=ws) in done.stderr
    assert "Traceback" not in done.stderr
    if "--clean-on-removal" not in args:
        assert mtimes(ws) == before


def test_bad_stamp_folder(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "c" / ".buildtool", "not a folder")
    done = run_helper(ws, tmp_path / "c", ["true"], check=False)
    assert done.returncode == 2
    assert f"bad stamp folder: {tmp_path}/c/.buildtool" in done.stderr


def test_missing_and_unknown_command(ws: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [*HELPER, "--workspace", str(ws), "--cache", str(tmp_path / "c")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "missing COMMAND" in done.stderr
    done = run_helper(ws, tmp_path / "c", ["no-such-program-xyz"], check=False)
    assert done.returncode == 2 and "command not found: no-such-program-xyz" in done.stderr


def test_argparse_errors_exit_2() -> None:
    done = subprocess.run([*HELPER, "--cache", "x"], capture_output=True, text=True)
    assert done.returncode == 2 and "--workspace" in done.stderr


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    # a folder another user can enter (pytest's tmp_path is private to root)
    path = Path(tempfile.mkdtemp(prefix="cache-cli-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(
    shutil.which("setpriv") is None or os.geteuid() != 0,
    reason="needs root and setpriv (util-linux) to run the helper without file-access capabilities",
)
@pytest.mark.parametrize("many", [0, 2500], ids=["few-files", "forked-hashing"])
def test_unreadable_file_exits_2_naming_it(shared_tmp: Path, many: int) -> None:
    write(shared_tmp / "ws" / "ok.txt", "fine")
    for index in range(many):
        write(shared_tmp / "ws" / f"d{index % 9}" / f"f{index}", "x")
    locked = shared_tmp / "ws" / ("d8" if many else ".") / "locked.txt"
    write(locked, "secret")
    locked.chmod(0)
    (shared_tmp / "cache").mkdir()
    # Root without its capabilities: the mode-0 file is unreadable, while the project, its venv
    # and the interpreter stay readable wherever they live (another user could not read a
    # checkout under /root).
    done = subprocess.run(
        ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all"]
        + [os.fsdecode(a) for a in helper_cmd(shared_tmp / "ws", shared_tmp / "cache", ["true"])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"cannot read input file {os.path.normpath(locked)}: Permission denied" in done.stderr
    assert "Traceback" not in done.stderr


def test_dry_run_reports_and_changes_nothing(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    before = mtimes(ws)
    done = run_helper(ws, cache, ["false"], "--dry-run")
    lines = done.stdout.splitlines()
    assert lines[0] == "changed (no stamp yet)"
    assert lines[1].startswith("digest      ") and len(lines[1].split()[1]) == 64
    assert lines[2].startswith("stamp time  ")
    assert lines[3] == "files       2 hashed (18 bytes), 2 to align, 0 skipped"
    assert mtimes(ws) == before and not cache.exists()
    run_helper(ws, cache, ["true"])
    stamp = (cache / ".buildtool" / "stamp").read_bytes()
    again = run_helper(ws, cache, ["false"], "--dry-run")
    assert again.stdout.splitlines()[0] == "unchanged"
    assert again.stdout.splitlines()[1] == lines[1]
    assert again.stdout.splitlines()[3] == "files       2 hashed (18 bytes), 0 to align, 0 skipped"
    os.utime(ws / "src" / "a.txt", (5, 5))
    moved = run_helper(ws, cache, ["false"], "--dry-run")
    assert moved.stdout.splitlines()[0] == "unchanged"
    assert "1 to align" in moved.stdout
    assert (cache / ".buildtool" / "stamp").read_bytes() == stamp
    via_stamp = subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "buildtool",
            "stamp",
            "--workspace",
            str(ws),
            "--cache",
            str(cache),
        ],
        capture_output=True,
        text=True,
    )
    assert via_stamp.returncode == 0 and via_stamp.stdout == moved.stdout


def test_unchanged_run_leaves_the_stamp_byte_identical(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    run_helper(ws, cache, ["true"])
    stamp = cache / ".buildtool" / "stamp"
    data, inode = stamp.read_bytes(), stamp.stat().st_ino
    os.utime(ws / "src" / "a.txt", (7, 7))
    done = run_helper(ws, cache, ["true"])
    assert "unchanged" in done.stderr and "1 aligned" in done.stderr
    assert stamp.read_bytes() == data and stamp.stat().st_ino == inode
    assert leftovers(cache) == []


def test_lock_timeout_says_it_waits_then_exits_2(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "c" / ".buildtool"
    state.mkdir(parents=True)
    with open(state / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("424242\n")
        held.flush()
        done = run_helper(ws, tmp_path / "c", ["true"], "--lock-timeout", "0.3", check=False)
    assert done.returncode == 2
    assert f"waiting for the cache lock {state}/lock (held by pid 424242)" in done.stderr
    assert f"timed out after 0.3 s waiting for the cache lock {state}/lock" in done.stderr


def test_lock_of_a_killed_holder_does_not_block(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "c" / ".buildtool"
    state.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'w'); fcntl.flock(f,fcntl.LOCK_EX);"
            "print('held',flush=True); time.sleep(60)",
            str(state / "lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    holder.kill()
    holder.wait()
    done = run_helper(ws, tmp_path / "c", ["true"], "--lock-timeout", "5")
    assert "waiting" not in done.stderr


BARE_IMAGE = """
import sys, importlib.abc
allowed = set(sys.stdlib_module_names) | {"buildtool", "blake3"} | set(sys.argv[1].split(","))
class Bare(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in allowed:
            raise ImportError(f"No module named {name!r} (bare image)")
sys.meta_path.insert(0, Bare())
from buildtool.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("extra", ["rich", ""])
def test_runs_with_only_stdlib_and_blake3(ws: Path, tmp_path: Path, extra: str) -> None:
    # inside an image build only the stdlib, blake3 and maybe rich are installed
    args = ["cache-build", "--workspace", str(ws), "--cache", str(tmp_path / "c"), "--"]
    done = subprocess.run(
        [sys.executable, "-B", "-c", BARE_IMAGE, extra, *args, "sh", "-c", "echo built"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "built\n" and "2 inputs hashed" in done.stderr


def test_missing_blake3_is_a_clear_error(ws: Path, tmp_path: Path) -> None:
    code = BARE_IMAGE.replace('{"buildtool", "blake3"}', '{"buildtool"}')
    args = ["cache-build", "--workspace", str(ws), "--cache", str(tmp_path / "c"), "--", "true"]
    done = subprocess.run(
        [sys.executable, "-B", "-c", code, "", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "the Python package 'blake3' is not installed" in done.stderr


def test_inputs_the_build_creates_join_the_stamp(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    # a first build that writes a lock file and a new folder into the workspace (cargo, npm)
    script = "echo pinned > build.lock; mkdir -p gen/sub; echo g > gen/sub/x"
    first = run_helper(ws, cache, ["sh", "-c", script])
    assert "the build created 2 input(s), now part of the stamp: build.lock, gen/sub/x" in (
        first.stderr
    )
    stamp = (cache / ".buildtool" / "stamp").read_text()
    again = run_helper(ws, cache, ["true"])
    assert "unchanged" in again.stderr and "4 inputs hashed" in again.stderr
    assert f"stamp time {stamp.split('time ')[1].split()[0]}" in again.stderr


@pytest.mark.parametrize(
    "script",
    ["echo changed > src/a.txt", "rm src/a.txt", "mv src/a.txt src/b.txt; echo n > new.txt"],
    ids=["modified", "deleted", "renamed"],
)
def test_inputs_the_build_modifies_or_removes_mean_changed(
    ws: Path, tmp_path: Path, script: str
) -> None:
    cache = tmp_path / "c"
    run_helper(ws, cache, ["sh", "-c", script])
    again = run_helper(ws, cache, ["true"])
    assert "changed (inputs changed)" in again.stderr


def test_a_failed_build_amends_nothing(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    failed = run_helper(ws, cache, ["sh", "-c", "echo x > made.txt; exit 3"], check=False)
    assert failed.returncode == 3 and "the build created" not in failed.stderr
    assert "changed (inputs changed)" in run_helper(ws, cache, ["true"]).stderr


def test_dry_run_does_not_wait_for_a_running_build(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    run_helper(ws, cache, ["true"])
    with open(cache / ".buildtool" / "lock", "r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        (cache / ".buildtool" / "building").write_text("1\n")  # that build's marker
        done = run_helper(ws, cache, ["true"], "--dry-run", "--lock-timeout", "0")
    assert done.stdout.startswith("unchanged\n")  # a running build is not an interrupted one
    assert "a build holds the cache lock right now" in done.stderr
