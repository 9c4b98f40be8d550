"""Reading the Dockerfile and checking the rules that keep every builder behind the stamp.

A builder stage that compiled without `buildtool cache-build`, or kept its outputs on a cache
mount other than the shared `…-${TARGETARCH}-inputs-v3` one, or with another sharing mode, could
ship stale artifacts: `check` names each such stage and what it does wrong. Pure: text in,
findings out. tests/buildtool/images/test_dockerfile.py runs it on the real Dockerfile.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from buildtool.images.targets import BUILDER_STAGE, CACHE_ID_TEMPLATE, TARGETS

HELPER = ("python3", "-B", "-m", "buildtool", "cache-build")
BUILDER_PREFIX = "build-"


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: RUN, COPY, FROM, ...
    args: str  # the rest, continuation lines joined
    line: int  # first line number (1-based)


@dataclass
class Stage:
    name: str
    base: str
    line: int
    instructions: list[Instruction] = field(default_factory=list)


def instructions(text: str) -> list[Instruction]:
    """Instructions with `\\` continuations joined and comments dropped."""
    out: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are ignored
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(p for p in pending if p)
        keyword, _, args = joined.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
        pending = []
    return out


def stages(text: str) -> list[Stage]:
    result: list[Stage] = []
    for instr in instructions(text):
        if instr.keyword == "FROM":
            words = instr.args.split()
            words = [w for w in words if not w.startswith("--platform=")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(result))
            result.append(Stage(name=name, base=words[0], line=instr.line))
        elif result:
            result[-1].instructions.append(instr)
    return result


def run_mounts(args: str) -> tuple[list[dict[str, str]], str]:
    """The `--mount=` options of a RUN and the command after them."""
    mounts: list[dict[str, str]] = []
    rest = args
    while True:
        match = re.match(r"--mount=(\S+)\s*", rest)
        if match is None:
            flag = re.match(r"--(network|security)=\S+\s*", rest)
            if flag is None:
                break
            rest = rest[flag.end() :]
            continue
        fields: dict[str, str] = {}
        for part in match.group(1).split(","):
            key, _, value = part.partition("=")
            fields[key] = value
        mounts.append(fields)
        rest = rest[match.end() :]
    return mounts, rest


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def runs_helper_first(command: str) -> bool:
    """True when the command starts by running the helper (nothing builds before it)."""
    return tuple(_words(command)[: len(HELPER)]) == HELPER


def helper_command(command: str) -> list[str]:
    """The command the helper runs (after `--`), up to the first shell `&&`."""
    words = _words(command)
    if tuple(words[: len(HELPER)]) != HELPER or "--" not in words:
        return []
    after = words[words.index("--") + 1 :]
    return after[: after.index("&&")] if "&&" in after else after


def builder_stages(all_stages: list[Stage]) -> list[Stage]:
    """Stages named `build-*` and every stage a cache mount appears in."""
    chosen = []
    for stage in all_stages:
        has_cache = any(
            m.get("type") == "cache"
            for i in stage.instructions
            if i.keyword == "RUN"
            for m in run_mounts(i.args)[0]
        )
        if stage.name.startswith(BUILDER_PREFIX) or has_cache:
            chosen.append(stage)
    return chosen


def check(text: str) -> list[str]:
    """Every rule violation, each naming the stage and line; empty when the file is sound."""
    problems: list[str] = []
    all_stages = stages(text)
    names = {s.name for s in all_stages}
    for target in TARGETS:
        if target not in names:
            problems.append(f"no runtime target stage `{target}`")
    builders = builder_stages(all_stages)
    if BUILDER_STAGE not in {s.name for s in builders}:
        problems.append(f"no builder stage `{BUILDER_STAGE}`")
    for stage in builders:
        helper_runs = 0
        for instr in stage.instructions:
            if instr.keyword in ("ADD",) or (
                instr.keyword == "COPY" and "--from=" not in instr.args
            ):
                problems.append(
                    f"stage {stage.name} line {instr.line}: {instr.keyword} of workspace files "
                    "in a builder stage; copy them in the builder base"
                )
            if instr.keyword != "RUN":
                continue
            mounts, command = run_mounts(instr.args)
            caches = [m for m in mounts if m.get("type") == "cache"]
            where = f"stage {stage.name} line {instr.line}"
            if not runs_helper_first(command):
                problems.append(f"{where}: RUN builds without `{' '.join(HELPER)}` first")
            else:
                helper_runs += 1
                if not helper_command(command):
                    problems.append(f"{where}: the helper runs no build command (`-- COMMAND`)")
            if len(caches) != 1:
                problems.append(f"{where}: needs exactly one cache mount, has {len(caches)}")
            for cache in caches:
                if cache.get("id") != CACHE_ID_TEMPLATE:
                    problems.append(
                        f"{where}: cache id {cache.get('id')!r}, must be {CACHE_ID_TEMPLATE!r}"
                    )
                if cache.get("sharing") != "locked":
                    problems.append(
                        f"{where}: cache sharing {cache.get('sharing')!r}, must be 'locked'"
                    )
            if any("${TARGETARCH}" in (c.get("id") or "") for c in caches) and not any(
                i.keyword == "ARG" and i.args.split("=")[0].strip() == "TARGETARCH"
                for i in stage.instructions[: stage.instructions.index(instr)]
            ):
                problems.append(f"{where}: uses ${{TARGETARCH}} without `ARG TARGETARCH`")
        if helper_runs == 0:
            problems.append(f"stage {stage.name}: no RUN through the helper")
    by_name = {s.name: s for s in all_stages}
    builder_names = {s.name for s in builders}
    for target in TARGETS:
        if target in by_name:
            problems += _check_runtime(by_name[target], builder_names)
    return problems


def _check_runtime(stage: Stage, builder_names: set[str]) -> list[str]:
    """A sidecar target: artifacts only from builder stages, non-root, port, health, entrypoint."""
    problems: list[str] = []
    keywords = [i.keyword for i in stage.instructions]
    for keyword in ("USER", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT"):
        if keyword not in keywords:
            problems.append(f"stage {stage.name}: no {keyword}")
    users = [i.args.split(":")[0] for i in stage.instructions if i.keyword == "USER"]
    if users and users[-1] in ("root", "0"):
        problems.append(f"stage {stage.name}: runs as root")
    for instr in stage.instructions:
        for source in re.findall(r"(?:--from=|,from=)([\w.-]+)", instr.args):
            if source not in builder_names:
                problems.append(
                    f"stage {stage.name} line {instr.line}: takes files from {source!r}, "
                    "which is not a builder stage behind the helper"
                )
    return problems
