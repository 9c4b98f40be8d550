"""Guards: each accelerator checks its private internals at startup; changed, it is off for the
run with one warning line, and children still get the right verdict. Also the plain switch.

Each guard test changes, in this (the parent's) process, the internal one accelerator relies
on — the way a pytest or Python upgrade could — and runs an inner session with a passing and a
failing isolated test. The parent must warn once, naming that accelerator and why; pass the
children a list without it; and the children's verdicts must stay right: the pass passes, the
failure fails with its own assertion.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _pytest import config as pytest_config
from _pytest import fixtures
from _pytest import python as pytest_python
from _pytest.assertion import rewrite

from buildtool.isolation import accelerators

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

INNER = """
import json, os
import pytest

@pytest.mark.isolated(env={"SEEN_OUT": %(out)r})
def test_passes(request):
    used = request.config.getoption("isolated_accelerators")
    with open(os.environ["SEEN_OUT"], "w") as fh:
        json.dump(used.split(","), fh)

@pytest.mark.isolated()
def test_fails():
    value = 41
    assert value == 42
"""


def _warnings(rec: pytest.HookRecorder) -> list[str]:
    return [
        str(call.warning_message.message)
        for call in rec.getcalls("pytest_warning_recorded")
        if "accelerators off" in str(call.warning_message.message)
    ]


def run_inner(pytester: pytest.Pytester, *args: str) -> tuple[pytest.HookRecorder, list[str]]:
    out = pytester.path / "seen.json"
    pytester.makepyfile(test_inner=INNER % {"out": str(out)})
    rec = pytester.inline_run("--isolated-launcher=forkserver", *args)
    reports = {r.nodeid.split("::")[-1]: r for r in rec.getreports() if r.when == "call"}
    assert reports["test_passes"].passed
    assert reports["test_fails"].failed
    assert "assert 41 == 42" in reports["test_fails"].longreprtext
    assert "isolated child did not pass" not in reports["test_fails"].longreprtext
    seen: list[str] = json.loads(out.read_text())
    return rec, seen


def test_every_accelerator_passes_its_checks_on_the_tested_versions() -> None:
    on, off = accelerators.select(accelerators.NAMES)
    assert off == {}
    assert on == accelerators.NAMES


def test_all_on_reaches_the_children(pytester: pytest.Pytester) -> None:
    rec, seen = run_inner(pytester)
    assert _warnings(rec) == []
    assert set(seen) == set(accelerators.NAMES)


@pytest.mark.parametrize("switch", [("--isolated-plain",), ("-o", "isolated_plain=true")])
def test_the_plain_switch_turns_every_accelerator_off(
    pytester: pytest.Pytester, switch: tuple[str, ...]
) -> None:
    rec, seen = run_inner(pytester, *switch)
    assert seen == ["none"]
    assert _warnings(rec) == []  # asked for: nothing to warn about


def test_one_accelerator_alone(pytester: pytest.Pytester) -> None:
    _, seen = run_inner(pytester, "--isolated-accelerators=fixture_scan")
    assert seen == ["fixture_scan"]


def test_an_unknown_accelerator_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--isolated-accelerators=warp_drive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown warp_drive*"])


def test_the_tested_pytest_range_is_the_package_metadata_range() -> None:
    requires = importlib.metadata.requires("sidecar-forge") or []
    (pytest_req,) = [r for r in requires if r.startswith("pytest") and r[6:7] in "<>=!~ ;"]
    low, high = accelerators.TESTED_PYTEST
    assert f">={low}" in pytest_req and f"<{high}" in pytest_req
    assert accelerators.version_problem() is None


def _wrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    """The same behaviour through another function: its source no longer says what it does."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return wrapper


def _change_pyc_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest stops reading its cached pyc (it then rewrites every time: slower, still right).
    monkeypatch.setattr(rewrite, "_read_pyc", lambda source, pyc, trace=None: None)


def _change_metadata_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # A distribution without the private `_path` directory (as a zipped one has none).
    class Zipped(importlib.metadata.Distribution):
        def read_text(self, filename: str) -> str | None:
            return None

        def locate_file(self, path: Any) -> Any:
            return Path(path)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Zipped())


def _change_prebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_config, "_prepareconfig", _wrapped(pytest_config._prepareconfig))


def _change_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    original = pytest.PytestPluginManager.import_plugin

    def import_plugin(
        self: Any, modname: str, consider_entry_points: bool = False, lazy: bool = False
    ) -> None:
        original(self, modname, consider_entry_points)

    monkeypatch.setattr(pytest.PytestPluginManager, "import_plugin", import_plugin)


def _change_fixture_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest no longer finds fixtures hidden behind decorators (a change of meaning).
    monkeypatch.setattr(
        fixtures.FixtureManager, "_find_wrapped_fixture_def", lambda self, obj: None
    )


def _change_own_call(monkeypatch: pytest.MonkeyPatch) -> None:
    collector = pytest_python.PyCollector
    monkeypatch.setattr(collector, "_genfunctions", _wrapped(collector._genfunctions))


CHANGES: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], str]] = {
    "pyc_reader": (_change_pyc_reader, "did not read back its own pyc"),
    "metadata_cache": (_change_metadata_cache, "no _path directory"),
    "prebuilt": (_change_prebuilt, "no longer builds its config with get_config"),
    "snapshot": (_change_snapshot, "import_plugin has another signature"),
    "fixture_scan": (_change_fixture_scan, "no longer tell fixtures from other attributes"),
    "own_call": (_change_own_call, "names a parametrized call's item another way"),
}


def test_every_accelerator_has_a_guard_test() -> None:
    assert set(CHANGES) == set(accelerators.NAMES)


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_changed_internal_turns_its_accelerator_off_with_one_warning(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    change, why = CHANGES[name]
    change(monkeypatch)
    rec, seen = run_inner(pytester)
    (line,) = _warnings(rec)
    assert "\n" not in line and f"{name} (" in line and why in line
    assert name not in seen
    assert set(seen) == set(accelerators.NAMES) - {name}  # the others stay on


def test_a_pytest_outside_the_tested_range_turns_them_all_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytest, "__version__", "9.9.0")
    rec, seen = run_inner(pytester)
    (line,) = _warnings(rec)
    assert "pytest 9.9.0 is outside the tested range >=9.2,<9.3" in line
    assert all(name in line for name in accelerators.NAMES)
    assert seen == ["none"]


def test_the_snapshot_alone_serves_children_from_the_snapshot(pytester: pytest.Pytester) -> None:
    # Without `prebuilt`, pytest imports its own plugins while parsing: the snapshot must not
    # take those for plugins to refuse (it would hand every request back).
    pytester.makepyfile(
        test_alone="""
import pytest
from buildtool.isolation import snapshot

@pytest.mark.isolated()
@pytest.mark.parametrize("n", range(2))
def test_resumed(n):
    assert snapshot.resumed()
"""
    )
    rec = pytester.inline_run("--isolated-launcher=forkserver", "--isolated-accelerators=snapshot")
    rec.assertoutcome(passed=2)
