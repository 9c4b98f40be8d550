"""Reading BuildKit's plain progress output (`--progress=plain`). Pure: lines in, steps out.

#7 [builder-base 3/3] COPY . /src/
#7 CACHED
#9 [build-wheel 2/2] RUN --mount=type=cache,... python3 -B -m buildtool cache-build ...
#9 0.412 artifact: building the wheel for sidecar-vllm, ... in /cache/wheel/build
#9 DONE 3.1s
#10 ERROR: executor failed running [/bin/sh -c ...]: exit code: 1
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_LINE = re.compile(r"^#(?P<num>\d+) (?P<rest>.*)$")
_NAME = re.compile(r"^\[(?P<stage>[^\]]*?)\s*(?P<index>\d+)/(?P<count>\d+)\] (?P<instr>.*)$")
_DONE = re.compile(r"^DONE (?P<secs>[\d.]+)s$")
_OUTPUT = re.compile(r"^(?P<at>\d+\.\d+) (?P<text>.*)$")


@dataclass
class Step:
    """One BuildKit vertex as the plain printer showed it."""

    number: int
    name: str
    stage: str | None = None  # "build-wheel"; None for internal vertices
    instruction: str | None = None  # "RUN ...", "COPY ...", "FROM ..."
    status: str = "running"  # running, done, cached, error, canceled
    seconds: float | None = None
    error: str | None = None
    output: list[str] = field(default_factory=list)

    @property
    def is_instruction(self) -> bool:
        """A Dockerfile instruction that BuildKit can cache (FROM only resolves an image)."""
        return self.instruction is not None and not self.instruction.startswith("FROM ")

    @property
    def keyword(self) -> str:
        return (self.instruction or "").split(" ", 1)[0]


class PlainProgress:
    """Feed lines as they arrive; `steps` holds every vertex seen, in order of appearance."""

    def __init__(self) -> None:
        self._by_number: dict[int, Step] = {}

    @property
    def steps(self) -> list[Step]:
        return list(self._by_number.values())

    def feed(self, line: str) -> Step | None:
        """Take one line; returns the step it concerned (None for other lines)."""
        match = _LINE.match(line.rstrip("\r\n"))
        if match is None:
            return None
        number, rest = int(match["num"]), match["rest"]
        step = self._by_number.get(number)
        if step is None:
            step = Step(number=number, name=rest)
            named = _NAME.match(rest)
            if named:
                step.stage = named["stage"] or None
                step.instruction = named["instr"]
            self._by_number[number] = step
            return step
        if rest == step.name or rest.startswith("sha256:"):
            return step
        if rest == "CACHED":
            step.status = "cached"
        elif rest == "CANCELED":
            step.status = "canceled"
        elif rest.startswith("ERROR"):
            step.status = "error"
            step.error = rest.partition(":")[2].strip() or rest
        elif done := _DONE.match(rest):
            step.status = "done"
            step.seconds = float(done["secs"])
        elif out := _OUTPUT.match(rest):
            step.output.append(out["text"])
        return step


def parse(lines: Iterable[str]) -> list[Step]:
    progress = PlainProgress()
    for line in lines:
        progress.feed(line)
    return progress.steps


@dataclass(frozen=True)
class CacheCounts:
    cached: int
    total: int


def cache_counts(steps: Iterable[Step]) -> CacheCounts:
    """Instruction steps served from BuildKit's cache, out of all instruction steps run."""
    instr = [s for s in steps if s.is_instruction]
    return CacheCounts(sum(1 for s in instr if s.status == "cached"), len(instr))


def stage_steps(steps: Iterable[Step], stage_prefix: str) -> list[Step]:
    """Steps of the stages whose name starts with `stage_prefix` (e.g. "build-")."""
    return [s for s in steps if s.stage is not None and s.stage.startswith(stage_prefix)]
