"""The engine checks: a real vLLM (CPU build) with a tiny model made here, the sidecar in front
of it in every parser mode, the real `openai` client. Slow (an install on first use, an engine
start), so they run in `nox -s engine` (SIDECAR_FORGE_ENGINE_TESTS=1), which prints the table
of checks passed per parser mode. docs/testing.md, "A real engine".
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_harness import (
    PARSER_MODES,
    cache_dir,
    engine_venv,
    start_sidecar,
    start_vllm,
    tiny_model,
)

HERE = Path(__file__).resolve().parent
OPT_IN = "SIDECAR_FORGE_ENGINE_TESTS"
_RESULTS = pytest.StashKey[dict[tuple[str, str], str]]()
_STARTED = pytest.StashKey[float]()
REPORTS = HERE.parents[2] / ".reports"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RESULTS] = {}
    config.stash[_STARTED] = time.time()


def _mine(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(OPT_IN) == "1":
        return
    skip = pytest.mark.skip(
        reason=f"a real vLLM is installed and started: these run in `nox -s engine` ({OPT_IN}=1)"
    )
    for item in items:
        if _mine(item):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not _mine(item) or not hasattr(item, "callspec"):
        return
    mode = item.callspec.params.get("mode")
    if mode is None:
        return
    check = item.originalname  # type: ignore[attr-defined]
    results = item.config.stash[_RESULTS]
    key = (check, str(mode))
    if report.failed:
        results[key] = "FAIL"
    elif report.when == "call" and report.passed:
        results.setdefault(key, "pass")
    elif report.skipped:
        results.setdefault(key, "skip")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # The structural-tag tables this run wrote (test_structural_tags.py), one per xgrammar
    started = terminalreporter.config.stash[_STARTED]
    for table in sorted(REPORTS.glob("structural-tags-*.txt")):
        if table.stat().st_mtime >= started:
            for line in table.read_text().splitlines():
                terminalreporter.write_line(line)
    results = terminalreporter.config.stash[_RESULTS]
    if not results:
        return
    modes = list(PARSER_MODES)
    checks = list(dict.fromkeys(check for check, _ in results))
    width = max(len(c) for c in checks)
    header = "DYN_PARSER_VERSION"
    write = terminalreporter.write_line
    write("")
    write("engine checks: real vLLM (CPU) + tiny model, sidecar from the venv, openai client")
    write(f"{'check':<{width}}  " + "  ".join(f"{m:>5}" for m in modes) + f"   ({header})")
    for check in checks:
        cells = [results.get((check, m), "-") for m in modes]
        write(f"{check:<{width}}  " + "  ".join(f"{c:>5}" for c in cells))
    totals = []
    for m in modes:
        ran = [v for (c, mm), v in results.items() if mm == m and v != "skip"]
        totals.append(f"{sum(v == 'pass' for v in ran)}/{len(ran)}")
    write(f"{'passed':<{width}}  " + "  ".join(f"{t:>5}" for t in totals))


@pytest.fixture(scope="session")
def logs() -> Path:
    """The servers' logs, kept after the run for a failure's story (.reports is ignored)."""
    path = HERE.parents[2] / ".reports" / "engine-logs"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="session")
def engine_python() -> Path:
    return engine_venv()


@pytest.fixture(scope="session")
def model_dir(engine_python: Path) -> Path:
    return tiny_model(engine_python, cache_dir())


@pytest.fixture(scope="session")
def vllm(engine_python: Path, model_dir: Path, logs: Path) -> Iterator[str]:
    server, url = start_vllm(engine_python, model_dir, logs)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session", params=list(PARSER_MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def sidecar(vllm: str, mode: str, logs: Path) -> Iterator[str]:
    process, url = start_sidecar(vllm, PARSER_MODES[mode], logs, f"sidecar-{mode}")
    try:
        yield url
    finally:
        process.stop()


@pytest.fixture(scope="session")
def misconfigured_vllm(engine_python: Path, model_dir: Path, logs: Path) -> Iterator[str]:
    """vLLM started the usual way for a reasoning model: `--reasoning-parser qwen3`, which
    gates structured output behind the end of the reasoning."""
    server, url = start_vllm(
        engine_python, model_dir, logs, ("--reasoning-parser", "qwen3"), name="vllm-reasoning"
    )
    try:
        yield url
    finally:
        server.stop()
