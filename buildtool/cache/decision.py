"""The stamp decision (docs/build-cache.md, rules 4-6), a pure function of its inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from buildtool.cache.stamp import Stamp, StampProblem


@dataclass(frozen=True)
class Decision:
    changed: bool
    stamp_time: int  # T: every input's mtime after alignment
    reason: str


def decide(
    old: Stamp | StampProblem,
    digest: str,
    now: float,
    newest_artifact_mtime: float | None,
    *,
    interrupted: bool = False,
) -> Decision:
    """Keep T when the inputs match the stamp; otherwise move T past everything seen.

    `newest_artifact_mtime` matters only for a change (callers may skip the scan otherwise).
    `interrupted`: the previous build under this stamp was killed. Its artifacts may be newer
    than T yet partly written (setuptools and many make recipes write in place), so the inputs
    count as changed and T moves past them: the resumed build redoes everything.
    New T is strictly greater than `now`, the old T and every artifact mtime, in whole seconds
    (`floor(x) + 1`, which equals rule 4's ceil(now) unless now is a whole second).
    """
    if isinstance(old, Stamp) and old.digest == digest and not interrupted:
        return Decision(False, old.time, "unchanged")
    candidates = [math.floor(now) + 1]
    if isinstance(old, Stamp):
        candidates.append(old.time + 1)
        reason = "previous build was interrupted" if old.digest == digest else "inputs changed"
    else:
        reason = old.value
    if newest_artifact_mtime is not None:
        candidates.append(math.floor(newest_artifact_mtime) + 1)
    return Decision(True, max(candidates), reason)


def removed_paths(old_paths: list[bytes] | None, new_paths: list[bytes]) -> bool:
    """Did the input path list lose a path? Unknown old list (torn, foreign, none) counts."""
    if old_paths is None:
        return True
    return not set(new_paths).issuperset(old_paths)
