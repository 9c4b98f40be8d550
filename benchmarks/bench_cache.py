"""Build-cache benchmarks, measured side by side in one run, with their goals.

1. blake3 throughput of the helper vs `b3sum` on the same large files (goal: ratio >= 0.9).
2. The no-op check (stamp unchanged) on a generated 20,000-file / 100 MB workspace
   (goal: <= 0.3 s), in-process and through the CLI, with b3sum over the same files beside it.
3. Per-file cost for small files: hashing, and setting mtimes.
4. The randomized scenario harness with 1,000 sequences
   (tests/buildtool/cache/test_cache_harness.py).

Usage: python benchmarks/bench_cache.py [--big-mib 512] [--files 20000] [--harness 1000]
       (--harness 0 skips the harness run)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from buildtool.cache.align import align  # noqa: E402
from buildtool.cache.config import CacheConfig  # noqa: E402
from buildtool.cache.inputs import InputRules  # noqa: E402
from buildtool.cache.scan import default_jobs, scan  # noqa: E402
from buildtool.cache.session import CacheSession  # noqa: E402

B3SUM = shutil.which("b3sum")


def best_of(runs: int, action: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def make_big(folder: Path, mib: int) -> list[Path]:
    folder.mkdir(parents=True)
    files = []
    chunk = os.urandom(1 << 20)
    for index in range(2):
        path = folder / f"big{index}.bin"
        with open(path, "wb") as handle:
            for block in range(mib // 2):
                handle.write(chunk[block % 7 :] + chunk[: block % 7])
        files.append(path)
    return files


def make_workspace(root: Path, count: int, total: int) -> None:
    size = total // count
    payload = os.urandom(size + 64)
    for index in range(count):
        folder = root / f"d{index % 200:03d}" / f"s{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:05d}.txt").write_bytes(payload[index % 64 : index % 64 + size])


def bench_large(tmp: Path, mib: int, jobs: int) -> list[tuple[str, str]]:
    files = make_big(tmp / "big", mib)
    os.sync()  # measure files at rest, not against their own write-back
    total = sum(f.stat().st_size for f in files)
    rules = InputRules.build([], ())
    root = os.fsencode(tmp / "big")
    scan(root, rules, jobs)  # warm the page cache
    helper = best_of(3, lambda: scan(root, rules, jobs))
    rows = [("large files", f"{len(files)} x {mib // 2} MiB")]
    rows.append(("helper blake3", f"{total / helper / 1e9:.2f} GB/s"))
    if B3SUM is None:
        rows.append(("b3sum", "not installed"))
        return rows
    cmd = [B3SUM, "--no-names", *map(str, files)]
    reference = best_of(3, lambda: subprocess.run(cmd, check=True, capture_output=True))
    rows.append(("b3sum", f"{total / reference / 1e9:.2f} GB/s"))
    rows.append(("ratio helper/b3sum", f"{reference / helper:.2f}  (goal >= 0.9)"))
    return rows


def bench_noop(tmp: Path, count: int, total: int, jobs: int) -> list[tuple[str, str]]:
    ws = tmp / "ws"
    make_workspace(ws, count, total)
    os.sync()
    cache = tmp / "cache"
    settings = CacheConfig(
        workspace=os.fsencode(ws), cache=os.fsencode(cache), jobs=jobs, wait_for_stamp_time=False
    )

    def session() -> int:
        run = CacheSession(settings, lambda _: None)
        with run as outcome:
            run.finish(completed=True)
        return outcome.aligned

    session()  # first stamp, aligns everything
    os.sync()
    aligned = session()
    assert aligned == 0
    noop = best_of(5, session)
    cli = [sys.executable, "-B", "-m", "buildtool", "cache-build"]
    cli += ["--workspace", str(ws), "--cache", str(cache), "--", "true"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    via_cli = best_of(3, lambda: subprocess.run(cli, check=True, capture_output=True, env=env))
    startup = best_of(3, lambda: subprocess.run([sys.executable, "-B", "-c", "pass"], check=True))
    rules = InputRules.build([b"cache"], ())
    one = best_of(3, lambda: scan(os.fsencode(ws), rules, 1))
    many = best_of(3, lambda: scan(os.fsencode(ws), rules, jobs))
    rows = [
        ("workspace", f"{count} files, {total / 1e6:.0f} MB, {jobs} cores"),
        ("no-op check (in-process)", f"{noop:.3f} s  (goal <= 0.3 s)"),
        ("no-op check (CLI, whole)", f"{via_cli:.3f} s  (python start-up alone {startup:.3f} s)"),
        ("hash only, 1 process", f"{one:.3f} s"),
        (f"hash only, {jobs} processes", f"{many:.3f} s  (speed-up {one / many:.2f}x)"),
    ]
    if B3SUM is not None:
        names = sorted(str(p) for p in ws.rglob("*.txt"))
        native = best_of(
            3,
            lambda: subprocess.run([B3SUM, "--no-names", *names], check=True, capture_output=True),
        )
        rows.append(
            (
                "b3sum, same files, 1 process",
                f"{native:.3f} s  (helper/b3sum time {many / native:.2f}x)",
            )
        )
        per_native = native / count * 1e6
    else:
        per_native = float("nan")
    result = scan(os.fsencode(ws), rules, 1)
    then = time.time() - 7200

    def realign() -> None:
        align(os.fsencode(ws), result.entries, int(then))  # every entry differs: all set

    set_mtimes = best_of(1, realign)
    rows += [
        ("per small file: hash, 1 process", f"{one / count * 1e6:.1f} us"),
        (f"per small file: hash, {jobs} processes", f"{many / count * 1e6:.1f} us"),
        ("per small file: b3sum", f"{per_native:.1f} us"),
        ("per small file: set mtime", f"{set_mtimes / count * 1e6:.1f} us"),
    ]
    return rows


def run_harness(sequences: int) -> list[tuple[str, str]]:
    env = {**os.environ, "BUILDTOOL_HARNESS_SEQUENCES": str(sequences), "PYTHONPATH": str(ROOT)}
    test = ROOT / "tests" / "buildtool" / "test_cache_harness.py"
    workers = ["-n", str(default_jobs())] if default_jobs() > 1 else []
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, str(test)],
        capture_output=True,
        text=True,
        env=env,
    )
    took = time.perf_counter() - start
    verdict = "0 stale" if done.returncode == 0 else f"FAILED (pytest exit {done.returncode})"
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
    return [("randomized harness", f"{sequences} sequences: {verdict} in {took:.0f} s")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--big-mib", type=int, default=512, help="total size of the large files")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--harness", type=int, default=1000, help="sequences; 0 skips")
    args = parser.parse_args()
    jobs = default_jobs()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        rows += bench_large(Path(tmp), args.big_mib, jobs)
        rows += bench_noop(Path(tmp), args.files, args.megabytes * 1_000_000, jobs)
    failed = False
    if args.harness:
        harness = run_harness(args.harness)
        failed = "FAILED" in harness[0][1]
        rows += harness
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    rows.append(("load average (1/5/15 min)", f"{load} on {os.cpu_count()} cores"))
    width = max(len(name) for name, _ in rows)
    print("build cache benchmarks")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
