"""Reading BuildKit's plain progress output, on text captured from Docker 20.10's BuildKit."""

from __future__ import annotations

from pathlib import Path

from buildtool.images import plainlog
from buildtool.images.build import failure_message

LOG = """\
#1 [internal] load build definition from Dockerfile
#1 sha256:7d1c8b18c6c6ce0a37e2072ec17d4cb0488e1a688a6ade91e18ce42f56c21355
#1 transferring dockerfile: 5.83kB 0.0s done
#1 DONE 0.0s

#4 [python-base 1/2] FROM docker.io/sidecar-forge/base:bookworm
#4 DONE 0.0s

#6 [python-base 2/2] RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse python3 -m venv
#6 CACHED

#9 [builder-base 3/3] COPY . /src/
#9 DONE 0.1s

#14 [build-vllm 2/2] RUN --mount=type=cache,id=x,target=/cache,sharing=locked python3 -B -m b
#14 1.243 buildtool cache-build: changed (no stamp yet)
#14 1.277 artifact: building the wheel for sidecar-vllm in /cache/vllm/build
#14 DONE 1.6s

#15 [sidecar-vllm 1/1] RUN pip install /artifacts/x.whl
#15 ERROR: executor failed running [/bin/sh -c pip install]: exit code: 1
#16 [2/2] RUN false
#16 CANCELED
"""


def test_steps_statuses_and_output() -> None:
    steps = {s.number: s for s in plainlog.parse(LOG.splitlines())}
    assert steps[1].stage is None and steps[1].instruction is None
    assert steps[1].status == "done" and steps[1].seconds == 0.0
    assert steps[4].instruction is not None and steps[4].instruction.startswith("FROM ")
    assert steps[6].status == "cached" and steps[6].stage == "python-base"
    assert steps[9].keyword == "COPY" and steps[9].seconds == 0.1
    assert steps[14].stage == "build-vllm" and steps[14].seconds == 1.6
    assert steps[14].output == [
        "buildtool cache-build: changed (no stamp yet)",
        "artifact: building the wheel for sidecar-vllm in /cache/vllm/build",
    ]
    assert steps[15].status == "error"
    assert steps[15].error is not None and "exit code: 1" in steps[15].error
    assert steps[16].status == "canceled" and steps[16].stage is None


def test_cache_counts_leave_out_from_and_internal_steps() -> None:
    counts = plainlog.cache_counts(plainlog.parse(LOG.splitlines()))
    # instructions: #6 (cached), #9, #14, #15, #16; FROM and [internal] are not counted
    assert (counts.cached, counts.total) == (1, 5)


def test_stage_steps_by_prefix() -> None:
    steps = plainlog.parse(LOG.splitlines())
    assert [s.number for s in plainlog.stage_steps(steps, "build-")] == [14]


def test_incremental_feed_matches_whole_parse() -> None:
    progress = plainlog.PlainProgress()
    seen = [progress.feed(line) for line in LOG.splitlines()]
    assert seen[0] is not None and seen[0].number == 1
    assert progress.feed("not a progress line") is None
    assert [s.status for s in progress.steps] == [
        s.status for s in plainlog.parse(LOG.splitlines())
    ]


def test_failure_message_names_the_step_and_shows_its_output(tmp_path: Path) -> None:
    steps = plainlog.parse(LOG.splitlines())
    next(s for s in steps if s.number == 15).output = [
        "x" * 10,
        "artifact: error: no console script",
    ]
    message = failure_message("sidecar-vllm", steps, tmp_path / "v.log", 1)
    assert "failed at [sidecar-vllm 1/1] RUN pip install" in message
    assert "exit code: 1" in message and "artifact: error: no console script" in message
    assert str(tmp_path / "v.log") in message
    assert "exit status 7" in failure_message("sidecar-vllm", [], tmp_path / "v.log", 7)
