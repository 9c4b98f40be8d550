"""`parsers/record.py` against plain `@dataclass(frozen=True, slots=True)`: isolated test time.

Issue 14 (item 8): the hand-written `Record`/`Frozen` bases stay only while they save >= 10% of
an isolated test's time. The toggle alone: a copy of this tree in which every `Frozen` class is
rewritten as `@dataclass(frozen=True, slots=True)` (each `Record` class as
`@dataclass(slots=True)`, keeping a hand-written `__init__` that does more than set fields),
`record.py` deleted and the inline `Delta` construction (which writes `__dict__`, absent with
slots) replaced by the constructors. Then, side by side in interleaved rounds, best of each:

* bench_isolation's "uses parsers" project (each isolated child imports parsers, reads its
  settings, picks a route, parses one call) in-process, fork server plain and all
  accelerators on: ms per isolated test, its own work included;
* a fresh interpreter doing the same (import + first parse): the cost the classes add.

    python benchmarks/bench_records.py [--rounds R] [--tests N] [--fresh F]
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_isolation as isolation

ROOT = Path(__file__).resolve().parent.parent
GOAL = 10.0  # % of an isolated test's time record.py must save to stay (issue 14, item 8)
_SENTINELS = {
    "_NEW_LIST": "field(default_factory=list)",
    "_NEW_DICT": "field(default_factory=dict)",
}
# The inline Delta builders (per-feed hot paths) and what the dataclass tree does instead.
_HOT_PATHS = {
    "parsers/types.py": [
        (r"(def content_delta\(text: str\) -> Delta:\n    \"\"\"[^\"]*\"\"\"\n).*?(?=\n\n\n)",
         r"\1    return Delta(text)"),
        (r"(def make_delta\([^)]*\) -> Delta:\n    \"\"\"[^\"]*\"\"\"\n).*?(?=\n\n\n)",
         r"\1    return Delta(content, reasoning_content, tool_calls)"),
        (r"(def args_delta\([^)]*\) -> ToolCallDelta:\n    \"\"\"[^\"]*\"\"\"\n).*?(?=\n\n\n)",
         r"\1    return ToolCallDelta(index, arguments=fragment)"),
        (r"(def reasoning_delta\(text: str\) -> Delta:\n    \"\"\"[^\"]*\"\"\"\n).*?(?=\n\n\n)",
         r"\1    return Delta(reasoning_content=text)"),
    ],
    "parsers/emit.py": [
        (r"        d = _new\(Delta\)  # built like types.make_delta.*?(?=        return \[d\]\n)",
         "        d = Delta(None, None, [ToolCallDelta(self.calls - 1, None, None, fragment)])\n"),
    ],
    "parsers/machine.py": [
        (r"                d = _new\(Delta\)  # built like types.content_delta.*?"
         r"fields\[\"tool_calls\"\] = \[\]\n",
         "                if self._mode == \"content\":\n                    d = Delta(text)\n"
         "                else:\n                    d = Delta(None, text)\n"),
    ],
}  # fmt: skip


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _convert(path: Path) -> bool:
    """Rewrite the `Frozen`/`Record` classes of one module as plain dataclasses."""
    src = path.read_text("utf-8")
    if "(Frozen)" not in src and "(Record)" not in src:
        return False
    lines = src.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, end line, replacement), 0-based
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.ClassDef) or len(node.bases) != 1:
            continue
        base = node.bases[0]
        if not (isinstance(base, ast.Name) and base.id in ("Frozen", "Record")):
            continue
        frozen = base.id == "Frozen"
        init = next(
            (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
        )
        # A frozen class's __init__ only stores its arguments (defaults become field defaults);
        # a mutable record's may do more, and then it stays.
        plain = init is not None and (
            frozen
            or all(
                isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Call)
                and getattr(s.value.func, "id", "") == "set_field"
                for s in init.body
            )
        )
        defaults: dict[str, str] = {}
        if init is not None and plain:
            args = init.args.args[1:]
            positional = args[len(args) - len(init.args.defaults) :]
            pairs = list(zip(positional, init.args.defaults, strict=True))
            kw = zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)
            pairs += [(a, d) for a, d in kw if d]
            defaults = {a.arg: ast.get_source_segment(src, d) or "" for a, d in pairs}
        start = min([node.lineno - 1, *(d.lineno - 1 for d in node.decorator_list)])
        decorator = (
            "@dataclass(frozen=True, slots=True)"
            if frozen
            else "@dataclass(slots=True)"
            if plain
            else "@dataclass(slots=True, init=False)"
        )
        header = lines[node.lineno - 1].replace(f"({base.id})", "")
        edits.append((start, node.lineno, [" " * node.col_offset + decorator + "\n", header]))
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(
                getattr(t, "id", "") == "__slots__" for t in stmt.targets
            ):
                edits.append((stmt.lineno - 1, stmt.end_lineno or stmt.lineno, []))
            elif (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is None
                and stmt.target.id in defaults
            ):
                default = defaults[stmt.target.id]
                written = ast.get_source_segment(src, stmt) or ""
                line = lines[stmt.lineno - 1].replace(
                    written, f"{written} = {_SENTINELS.get(default, default)}", 1
                )
                edits.append((stmt.lineno - 1, stmt.lineno, [line]))
        if init is not None and plain:
            edits.append((init.lineno - 1, init.end_lineno or init.lineno, []))
    for first, end, replacement in sorted(edits, key=lambda e: -e[0]):
        lines[first:end] = replacement
    out = "".join(lines)
    keep = "set_field = object.__setattr__\n" if "set_field(" in out else ""
    out = re.sub(r"from parsers\.record import [^\n]*\n", keep, out)
    out = out.replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nfrom dataclasses import dataclass, field\n",
        1,
    )
    path.write_text(out, "utf-8")
    return True


def dataclass_tree(dest: Path) -> Path:
    """A copy of the project with plain dataclasses instead of parsers/record.py."""
    for name in ("parsers", "sidecar", "buildtool"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    converted = [p for p in sorted((dest / "parsers").rglob("*.py")) if _convert(p)]
    for rel, subs in _HOT_PATHS.items():
        path = dest / rel
        text = path.read_text("utf-8")
        for pattern, replacement in subs:
            text, count = re.subn(pattern, replacement, text, count=1, flags=re.S)
            if count != 1:
                sys.exit(f"{rel}: the inline Delta construction changed; update _HOT_PATHS")
        path.write_text(text, "utf-8")
    (dest / "parsers" / "record.py").unlink()
    _say(f"dataclass tree: {len(converted)} modules rewritten, record.py removed")
    return dest


FRESH = """import time
t = time.perf_counter()
import parsers
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
s = parsers.load_settings({}, tool_parser="hermes")
parsers.select_route(s, {"tools": TOOLS, "tool_choice": "auto"})
text = '<tool_call>{"name": "f", "arguments": {"n": 1}}</tool_call>'
assert parsers.parse(text, tool_parser="hermes", tools=TOOLS).tool_calls[0].name == "f"
print(time.perf_counter() - t)
"""


def _fresh(root: Path) -> float:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", FRESH], cwd=root, env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"fresh run failed in {root}:\n{out.stderr}")
    return float(out.stdout) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    parser.add_argument("--tests", type=int, default=30, help="tests per run (default 30)")
    parser.add_argument("--fresh", type=int, default=40, help="fresh interpreters per tree")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("DYN_PARSER_VERSION", None)
    configs = {
        k: v
        for k, v in isolation._configurations().items()
        if k in ("in-process", "plain", "all on")
    }
    with tempfile.TemporaryDirectory(prefix="bench-records-") as tmp:
        roots = {"record.py": ROOT, "dataclass": dataclass_tree(Path(tmp) / "tree")}
        envs = {v: {**env, "PYTHONPATH": str(root)} for v, root in roots.items()}
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "settings_probe.py").write_text(isolation.PROBE)
        tests = isolation.TEST_FILES["uses parsers"].format(count=args.tests)
        (project / "test_bench.py").write_text(tests)
        for variant in roots:  # warm caches; every configuration must pass in both trees
            for extra in configs.values():
                isolation._run(project, envs[variant], *extra)
        best: dict[tuple[str, str], float] = {}
        fresh: dict[str, list[float]] = {v: [] for v in roots}
        for r in range(args.rounds):
            _say(f"round {r + 1} of {args.rounds} ...")
            order = list(roots) if r % 2 == 0 else list(roots)[::-1]
            for name, extra in configs.items():
                for variant in order:
                    elapsed, warm, _ = isolation._run(project, envs[variant], *extra)
                    key = (variant, name)
                    best[key] = min(best.get(key, elapsed - warm), elapsed - warm)
            for _ in range(max(1, args.fresh // args.rounds)):
                for variant in order:
                    fresh[variant].append(_fresh(roots[variant]))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"record.py vs plain dataclasses: {args.tests} isolated tests per run, best of "
        f"{args.rounds} interleaved rounds; load average {load}"
    )
    print(f"  {'configuration':<14}{'record.py':>11}{'dataclass':>11}{'saving':>9}{'of test':>9}")
    for name in configs:
        rec = best[("record.py", name)] / args.tests * 1000
        dc = best[("dataclass", name)] / args.tests * 1000
        share = (dc - rec) / dc * 100
        print(f"  {name:<14}{rec:>9.1f}ms{dc:>9.1f}ms{dc - rec:>7.1f}ms{share:>8.1f}%")
    rec_f, dc_f = min(fresh["record.py"]), min(fresh["dataclass"])
    saving = dc_f - rec_f
    print(
        f"  fresh interpreter, import + first parse (min of {len(fresh['record.py'])}): "
        f"record.py {rec_f:.1f} ms, dataclass {dc_f:.1f} ms, saving {saving:.1f} ms"
    )
    # Every isolated child imports the project afresh, so it pays the fresh saving; its share
    # of an isolated test's time (record.py tree) is the verdict. The per-test differences of
    # whole pytest runs above carry that saving too, but on a loaded machine their noise (the
    # parent's own startup, ~1 s a run) is as large as it.
    held = []
    for name in ("plain", "all on"):
        share = saving / (best[("record.py", name)] / args.tests * 1000) * 100
        held.append(share >= GOAL)
        print(f"  saving per child as a share of an isolated test ({name}): {share:.1f}%")
    verdict = "keep record.py" if all(held) else "NOT met: use plain dataclasses"
    print(f"  record.py saves >= {GOAL:g}% of an isolated test's time: {verdict}")


if __name__ == "__main__":
    main()
