"""Kills, torn stamps and two helpers on one cache (docs/build-cache.md, rules 3, 6, 8)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cache_support import helper_cmd, kill_helper_after, leftovers, run_helper, write

# recipes write in place and slowly, so a kill leaves half-written outputs newer than T
MAKEFILE = """\
SRCS := $(sort $(wildcard src/*.in))
OUTS := $(patsubst src/%.in,$(OUT)/%.out,$(SRCS))
$(OUT)/all.txt: $(OUTS)
\tcat $^ > $@
$(OUT)/%.out: src/%.in
\t@mkdir -p $(OUT)
\thead -c 3 $< > $@
\tsleep 0.05
\ttail -c +4 $< >> $@
"""


def project(root: Path, words: list[str]) -> Path:
    write(root / "Makefile", MAKEFILE)
    shutil.rmtree(root / "src", ignore_errors=True)
    for index, word in enumerate(words):
        write(root / "src" / f"{index:02d}.in", f"{word}-{index}\n")
    return root


def clean_build(ws: Path, scratch: Path) -> dict[str, bytes]:
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(ws, scratch)
    out = scratch / "clean-out"
    subprocess.run(["make", "-s", f"OUT={out}"], cwd=scratch, check=True, capture_output=True)
    return outputs(out)


def outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_equals_clean_build(tmp_path: Path) -> None:
    rng = random.Random(20260412)
    out = tmp_path / "out"
    ws = project(tmp_path / "ws", [f"w{i}" for i in range(8)])
    run_helper(ws, out, ["make", "-s", f"OUT={out}"])
    for round_ in range(5):
        # new content of the same size, then a build killed somewhere in the middle
        words = [f"{chr(97 + rng.randrange(26))}{i}" for i in range(8)]
        project(ws, words)
        kill_helper_after(rng.uniform(0.0, 0.9), ws, out, ["make", f"OUT={out}"])
        resumed = run_helper(ws, out, ["make", f"OUT={out}"])
        assert outputs(out) == clean_build(ws, tmp_path / "clean"), (round_, resumed.stderr)
        assert leftovers(out) == []


def test_interrupted_build_is_redone_even_with_same_inputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ws = project(tmp_path / "ws", ["abc", "def"])
    run_helper(ws, out, ["make", "-s", f"OUT={out}"])
    # a build of the same inputs killed by a signal (its outputs may be half written)
    killed = run_helper(ws, out, ["sh", "-c", "kill -9 $$"], check=False)
    assert killed.returncode == 137
    assert (out / ".buildtool" / "building").exists()
    (out / "00.out").write_text("abc")  # what a half-written copy looks like
    resumed = run_helper(ws, out, ["make", f"OUT={out}"])
    assert "changed (previous build was interrupted)" in resumed.stderr
    assert outputs(out) == clean_build(ws, tmp_path / "clean")
    assert leftovers(out) == []


def test_torn_stamp_means_full_rebuild(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ws = project(tmp_path / "ws", ["abc", "def", "ghi"])
    run_helper(ws, out, ["make", f"OUT={out}"])
    stamp = out / ".buildtool" / "stamp"
    data = stamp.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 2):
        stamp.write_bytes(data[:cut])
        again = run_helper(ws, out, ["make", f"OUT={out}"])
        assert "changed (torn stamp)" in again.stderr
        assert again.stdout.count("head -c 3") == 3  # every output rebuilt
        data = stamp.read_bytes()
    stamp.write_bytes(b'{"format": "someone else"}\n')
    foreign = run_helper(ws, out, ["make", f"OUT={out}"])
    assert "changed (foreign stamp file)" in foreign.stderr
    assert foreign.stdout.count("head -c 3") == 3


def test_temp_file_of_a_killed_writer_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ws = project(tmp_path / "ws", ["abc"])
    run_helper(ws, out, ["true"])
    write(out / ".buildtool" / "stamp.tmp-deadbeef0000", "half")
    run_helper(ws, out, ["true"])
    assert leftovers(out) == []


@pytest.mark.slow
def test_two_helpers_on_one_cache_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    a = project(tmp_path / "a", ["aaa", "bbb", "ccc"])
    b = project(tmp_path / "b", ["xxx", "yyy", "zzz"])
    results = tmp_path / "results"
    results.mkdir()

    go = tmp_path / "go"

    def build(name: str) -> list[str]:
        # the first build holds the cache until the test saw the second one wait; the copy
        # records what each helper's own build produced
        script = (
            f'make -s OUT="{out}" && while [ ! -e "{go}" ]; do sleep 0.02; done'
            f' && cp "{out}/all.txt" "{results}/{name}"'
        )
        return ["sh", "-c", script]

    first = subprocess.Popen(helper_cmd(a, out, build("a")), stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (out / ".buildtool" / "building").exists():
        assert time.time() < deadline and first.poll() is None
        time.sleep(0.01)
    second = subprocess.Popen(helper_cmd(b, out, build("b")), stderr=subprocess.PIPE, text=True)
    assert second.stderr is not None
    said = second.stderr.readline()  # blocks until the second helper reports
    assert "waiting for the cache lock" in said and f"{out}/.buildtool/lock" in said
    go.touch()
    _, err_a = first.communicate(timeout=60)
    rest_b = second.communicate(timeout=60)[1]
    err_b = said + rest_b
    assert first.returncode == 0 and second.returncode == 0, (err_a, err_b)
    assert "waiting for the cache lock" in err_b and "got the cache lock" in err_b
    assert "waiting" not in err_a
    assert (results / "a").read_bytes() == clean_build(a, tmp_path / "ca")["all.txt"]
    assert (results / "b").read_bytes() == clean_build(b, tmp_path / "cb")["all.txt"]
    assert outputs(out) == clean_build(b, tmp_path / "cb")
    assert leftovers(out) == []
    assert sorted(os.listdir(out / ".buildtool")) == ["lock", "paths", "stamp"]
