"""Per-test overhead of isolated tests, and what each accelerator saves on its own.

Generates a small project whose tests import a module reading an environment setting at import
and, in the second and third sets, the real `parsers` package (imported only; then used: a
route from the child's settings and a parsed call), then times pytest runs of the same tests in
fresh processes: in-process (the isolation plugin disabled: the baseline); the fork server
plain (`--isolated-accelerators=none`, i.e. `--isolated-plain`); the fork server with each
accelerator alone; with all of them (the default); and plain spawn for reference. Overhead per
test = (run - fork servers' warm-up - baseline) / tests. An accelerator's own saving = plain's
overhead - its own alone; it earns its place at >= 3 ms or >= 10% of a plain isolated
test's time (its overhead plus the test's own work).

Goals: all on >= 8x faster than spawn (steady state); each accelerator's saving as above.

    python benchmarks/bench_isolation.py [--tests N] [--repeat R] [--spawn-repeat S]

Runs are interleaved (every configuration once per round) and each figure is the best of the
rounds (as timeit takes the minimum): on a shared VM the hypervisor and the other jobs take the
cores away in bursts, and a one-second run can land in one; interleaving spreads the bursts
over every configuration alike. Spawn runs take ~13 s each, so they get --spawn-repeat rounds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from steal import Steal

TEST_FILES = {
    # The isolation machinery alone: the test module reads a setting at import, nothing else.
    "trivial": """
import pytest

import settings_probe


@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "2"}})
@pytest.mark.parametrize("n", range({count}))
def test_case(n):
    assert settings_probe.MODE in ("2", None)
""",
    # Realistic: each child also imports the project (`parsers`), which in-process runs do once.
    "imports parsers": """
import pytest

import settings_probe


@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "2"}})
@pytest.mark.parametrize("n", range({count}))
def test_case(n):
    import parsers

    assert settings_probe.MODE in ("2", None)
    assert parsers.ConfigError
""",
    # What the routing suite's children do: the real startup path (settings from the child's
    # environment, a route), then one call streamed by the engine and a family grammar, so
    # every part of `parsers` a route or stream test needs is imported in each child.
    "uses parsers": """
import pytest

import settings_probe

TOOLS = [{{"type": "function", "function": {{"name": "f", "parameters": {{}}}}}}]


@pytest.mark.isolated(env={{"DYN_PARSER_VERSION": "2"}})
@pytest.mark.parametrize("n", range({count}))
def test_case(n):
    import parsers

    settings = parsers.load_settings(tool_parser="hermes")
    route = parsers.select_route(settings, {{"tools": TOOLS, "tool_choice": "auto"}})
    # The child's environment says V2; the in-process baseline has the caller's (unset: V1).
    assert route.kind == ("parser_v2" if settings_probe.MODE == "2" else "legacy_jail")
    text = '<tool_call>{{"name": "f", "arguments": {{"n": %d}}}}</tool_call>' % n
    message = parsers.parse(text, tool_parser="hermes", tools=TOOLS)
    assert [call.name for call in message.tool_calls] == ["f"]
    assert settings_probe.MODE in ("2", None)
""",
}

PROBE = "import os\nMODE = os.environ.get('DYN_PARSER_VERSION')\n"
GOAL_RATIO = 8.0  # all accelerators on vs spawn, steady state


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _run(project: Path, env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """Wall time of one pytest run, the fork servers' warm-up it reports, and its output."""
    argv = [sys.executable, "-m", "pytest", str(project), "-q", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"benchmark run failed ({' '.join(args)}):\n{proc.stdout}\n{proc.stderr}")
    found = re.search(r"warm-up ([0-9.]+) s in total", proc.stdout)
    return elapsed, float(found.group(1)) if found else 0.0, proc.stdout


ACCELERATORS = (
    "pyc_reader",
    "metadata_cache",
    "prebuilt",
    "snapshot",
    "fixture_scan",
    "own_call",
)


def _configurations() -> dict[str, tuple[str, ...]]:
    fork = "--isolated-launcher=forkserver"
    runs = {
        "in-process": ("-p", "no:isolated", "-W", "ignore::pytest.PytestUnknownMarkWarning"),
        "plain": (fork, "--isolated-accelerators=none"),
    }
    for name in ACCELERATORS:
        runs[f"{name} alone"] = (fork, f"--isolated-accelerators={name}")
    runs["all on"] = (fork,)
    runs["spawn"] = ("--isolated-launcher=spawn",)
    return runs


def _measure(
    project: Path, env: dict[str, str], repeat: int, spawn_repeat: int
) -> dict[str, tuple[float, float]]:
    runs = _configurations()
    for extra in runs.values():  # warm caches (and check every configuration passes)
        _run(project, env, *extra)
    best: dict[str, tuple[float, float]] = {}
    for attempt in range(max(repeat, spawn_repeat)):
        _say(f"  round {attempt + 1} ...")
        for name, extra in runs.items():
            if attempt >= (spawn_repeat if name == "spawn" else repeat):
                continue
            elapsed, warm, _ = _run(project, env, *extra)
            if name not in best or elapsed - warm < best[name][0] - best[name][1]:
                best[name] = (elapsed, warm)
    return best


def _report(title: str, n: int, best: dict[str, tuple[float, float]]) -> tuple[bool, set[str]]:
    """Print the table; whether all-on meets its goal, and the accelerators that earn it."""
    base = best["in-process"][0]

    def per_test(name: str) -> float:
        total, warm = best[name]
        return (total - warm - base) / n * 1000

    plain = per_test("plain")
    plain_test = plain + base / n * 1000  # a plain isolated test's time, its own work included
    print(f"{title}: {n} tests; steady state (fork servers' warm-up taken out)")
    print(f"  {'configuration':<24}{'ms/test':>9}{'saving':>9}{'of test':>9}{'warm-up s':>11}")
    print(f"  {'in-process (baseline)':<24}{0:>9.1f}{'':>9}{'':>9}{'':>11}")
    earned: set[str] = set()
    for name in ["plain", *[f"{a} alone" for a in ACCELERATORS], "all on", "spawn"]:
        ms = per_test(name)
        saving = plain - ms
        share = saving / plain_test * 100 if plain_test > 0 else 0.0
        marks = ""
        if name.endswith(" alone"):
            keeps = saving >= 3.0 or share >= 10.0
            marks = "  keeps its place" if keeps else "  saves < 3 ms and < 10%"
            if keeps:
                earned.add(name.removesuffix(" alone"))
        shown = f"{saving:>9.1f}{share:>8.0f}%" if name not in ("plain", "spawn") else " " * 18
        print(f"  {name:<24}{ms:>9.1f}{shown}{best[name][1]:>11.2f}{marks}")
    ratio = per_test("spawn") / per_test("all on") if per_test("all on") > 0 else float("inf")
    met = ratio >= GOAL_RATIO
    print(
        f"  spawn / all on: {ratio:.1f}x (goal >= {GOAL_RATIO:g}x: {'met' if met else 'NOT met'})"
    )
    return met, earned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=30, help="tests per run (default 30)")
    parser.add_argument(
        "--repeat", type=int, default=5, help="rounds of every fork-server configuration"
    )
    parser.add_argument("--spawn-repeat", type=int, default=2, help="rounds with a spawn run")
    args = parser.parse_args()
    # pyc files may be written, so spawn is measured with warm caches (its best case).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("DYN_PARSER_VERSION", None)
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    steal = Steal()
    results: dict[str, dict[str, tuple[float, float]]] = {}
    for title, source in TEST_FILES.items():
        _say(f"{title}: warming caches, then the runs ...")
        with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
            project = Path(tmp)
            (project / "pytest.ini").write_text("[pytest]\n")
            (project / "settings_probe.py").write_text(PROBE)
            (project / "test_bench.py").write_text(source.format(count=args.tests))
            results[title] = _measure(project, env, args.repeat, args.spawn_repeat)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(
        f"isolation overhead per test, same tests for every configuration; best of "
        f"{args.repeat} interleaved rounds ({args.spawn_repeat} for spawn)"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (figures scale with load)")
    print(steal.describe())
    earned: dict[str, set[str]] = {}
    for title, best in results.items():
        _, earned[title] = _report(title, args.tests, best)
    everywhere = set(ACCELERATORS)
    for kept in earned.values():
        everywhere &= kept
    somewhere = set().union(*earned.values()) if earned else set()
    print(f"earn their place in every set: {', '.join(sorted(everywhere)) or 'none'}")
    print(f"in no set: {', '.join(sorted(set(ACCELERATORS) - somewhere)) or 'none'}")


if __name__ == "__main__":
    main()
