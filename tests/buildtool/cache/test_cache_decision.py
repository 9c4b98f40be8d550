"""The pure stamp decision and the stamp format, without any file system."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buildtool.cache.decision import decide, removed_paths
from buildtool.cache.stamp import Stamp, StampProblem, format_stamp, parse_stamp

D1 = "1" * 64
D2 = "2" * 64
P = "a" * 64


def test_unchanged_keeps_the_stamp_time() -> None:
    old = Stamp(D1, P, 1_000, 3)
    got = decide(old, D1, now=5_000.5, newest_artifact_mtime=9_999.0)
    assert (got.changed, got.stamp_time, got.reason) == (False, 1_000, "unchanged")


def test_changed_moves_past_now() -> None:
    got = decide(Stamp(D1, P, 1_000, 3), D2, now=5_000.25, newest_artifact_mtime=4_000.0)
    assert (got.changed, got.stamp_time) == (True, 5_001)


def test_changed_moves_past_the_previous_stamp_time() -> None:
    # the clock went backwards (another machine wrote the stamp): T still grows
    got = decide(Stamp(D1, P, 9_000, 3), D2, now=5_000.0, newest_artifact_mtime=None)
    assert got.stamp_time == 9_001


def test_changed_moves_past_the_newest_artifact() -> None:
    got = decide(Stamp(D1, P, 1_000, 3), D2, now=5_000.0, newest_artifact_mtime=7_000.5)
    assert got.stamp_time == 7_001


def test_whole_second_now_still_moves_strictly_past_it() -> None:
    # an artifact written at exactly now must be older than T, or make keeps it
    got = decide(StampProblem.MISSING, D1, now=5_000.0, newest_artifact_mtime=5_000.0)
    assert got.stamp_time == 5_001


@pytest.mark.parametrize("problem", list(StampProblem))
def test_unusable_stamp_means_changed(problem: StampProblem) -> None:
    got = decide(problem, D1, now=100.5, newest_artifact_mtime=50.0)
    assert got.changed and got.stamp_time == 101 and got.reason == problem.value


def test_interrupted_build_with_same_inputs_is_a_change() -> None:
    old = Stamp(D1, P, 1_000, 3)
    got = decide(old, D1, now=1_000.2, newest_artifact_mtime=1_003.7, interrupted=True)
    assert got.changed and got.stamp_time == 1_004
    assert got.reason == "previous build was interrupted"


@given(
    old_time=st.integers(0, 2**40),
    now=st.floats(0, 2**40, allow_nan=False),
    artifact=st.none() | st.floats(0, 2**40, allow_nan=False),
    same=st.booleans(),
    interrupted=st.booleans(),
)
def test_stamp_time_properties(
    old_time: int, now: float, artifact: float | None, same: bool, interrupted: bool
) -> None:
    old = Stamp(D1, P, old_time, 1)
    got = decide(old, D1 if same else D2, now, artifact, interrupted=interrupted)
    if same and not interrupted:
        assert not got.changed and got.stamp_time == old_time
    else:
        assert got.changed
        assert got.stamp_time > old_time and got.stamp_time > now
        assert artifact is None or got.stamp_time > artifact
        # never further than needed: one of the bounds is tight
        bounds = [math.floor(now) + 1, old_time + 1]
        if artifact is not None:
            bounds.append(math.floor(artifact) + 1)
        assert got.stamp_time == max(bounds)


def test_removed_paths() -> None:
    assert not removed_paths([b"a", b"b"], [b"a", b"b", b"c"])
    assert removed_paths([b"a", b"b"], [b"a", b"c"])  # a rename loses b
    assert removed_paths(None, [b"a"])  # unknown old list: assume the worst


def test_stamp_round_trip() -> None:
    stamp = Stamp(D1, P, 1_796_000_000, 12)
    assert parse_stamp(format_stamp(stamp)) == stamp


def test_every_truncation_is_torn() -> None:
    data = format_stamp(Stamp(D1, P, 1_796_000_000, 12))
    for cut in range(len(data)):
        assert parse_stamp(data[:cut]) is StampProblem.TORN, cut


def test_every_single_byte_corruption_is_detected() -> None:
    data = format_stamp(Stamp(D1, P, 1_796_000_000, 12))
    for index in range(len(data)):
        broken = bytearray(data)
        broken[index] ^= 0x01
        assert not isinstance(parse_stamp(bytes(broken)), Stamp), index


def test_foreign_and_unknown_version() -> None:
    assert parse_stamp(b"{'some': 'json'}\n") is StampProblem.FOREIGN
    future = format_stamp(Stamp(D1, P, 5, 1)).replace(b"version 1", b"version 9")
    assert parse_stamp(future) is StampProblem.UNKNOWN_VERSION
