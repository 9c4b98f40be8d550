"""What the fork server prepares for its children's pytest startup (the learned fixture scan of
its plugins, the prebuilt initial config) changes nothing a test can see: checked piece by
piece, and end to end against a spawned child, which prepares nothing."""

from __future__ import annotations

import functools
import json
import os
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest import config as pytest_config
from _pytest import fixtures

from buildtool.isolation import fixture_scan, prebuilt

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


@pytest.fixture
def learning() -> Iterator[None]:
    fixture_scan.learn()
    try:
        yield
    finally:
        fixture_scan.forget()


def _plugin_module() -> types.ModuleType:
    module = types.ModuleType("scan_probe_plugin")

    @pytest.fixture
    def plain_fixture() -> int:
        return 1

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

        return wrapper

    module.plain_fixture = plain_fixture  # type: ignore[attr-defined]
    module.hidden_fixture = decorate(pytest.fixture(lambda: 2))  # type: ignore[attr-defined]
    module.helper = lambda: 3  # type: ignore[attr-defined]
    module.CONSTANT = 4  # type: ignore[attr-defined]
    return module


def _fixture_dir(holder: object) -> list[str]:
    scan: Callable[[object], list[str]] = getattr(fixtures, "dir", dir)
    return scan(holder)


def test_learned_plugins_are_scanned_for_what_pytest_can_act_on_only(learning: None) -> None:
    module = _plugin_module()
    assert _fixture_dir(module) == dir(module)  # learning: the full list, as usual
    fixture_scan.stop_learning()
    # Fixtures, and a fixture behind a decorator (pytest warns about those): nothing else.
    assert _fixture_dir(module) == ["hidden_fixture", "plain_fixture"]
    assert fixture_scan.learned() >= 1


def test_a_plugin_not_seen_while_learning_is_scanned_in_full(learning: None) -> None:
    fixture_scan.stop_learning()
    module = _plugin_module()
    assert _fixture_dir(module) == dir(module)
    assert _fixture_dir(module) == dir(module)  # and nothing was learned from it


def test_a_plugin_changed_since_is_scanned_in_full(learning: None) -> None:
    module = _plugin_module()
    _fixture_dir(module)
    fixture_scan.stop_learning()
    module.added_later = pytest.fixture(lambda: 5)  # type: ignore[attr-defined]
    assert "added_later" in _fixture_dir(module)
    assert _fixture_dir(module) == dir(module)


def test_an_instance_is_looked_up_by_its_class(learning: None) -> None:
    class Plugin:
        @pytest.fixture
        def method_fixture(self) -> int:
            return 1

        def pytest_configure(self) -> None:
            pass

    first = Plugin()
    _fixture_dir(first)
    fixture_scan.stop_learning()
    second = Plugin()
    second.instance_value = 1  # type: ignore[attr-defined]
    assert _fixture_dir(second) == ["method_fixture"]


def test_forget_gives_pytest_its_dir_back(learning: None) -> None:
    fixture_scan.forget()
    fixture_scan.forget()  # idempotent
    assert not hasattr(fixtures, "dir")
    assert fixture_scan.learned() == 0


@pytest.mark.parametrize(
    ("args", "excluded"),
    [
        (["t.py", "-q"], ()),
        (["t.py", "-p", "no:cacheprovider", "-p", "xdist"], ("no:cacheprovider",)),
        (["-pno:doctest", "-p", " no:junitxml "], ("no:doctest", "no:junitxml")),
        (["-k", "x", "-p"], ()),
    ],
)
def test_excluded_reads_p_no_as_pytest_does(args: list[str], excluded: tuple[str, ...]) -> None:
    assert prebuilt.excluded(args) == excluded


@pytest.fixture
def restore_get_config() -> Iterator[None]:
    original = pytest_config.get_config
    try:
        yield
    finally:
        pytest_config.get_config = original
        prebuilt._built.clear()


def test_the_prebuilt_config_is_taken_once_with_the_callers_parameters(
    restore_get_config: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["a.py", "-p", "no:doctest"]
    assert prebuilt.prepare(args)
    assert not prebuilt.prepare(["b.py", "-p", "no:doctest"])  # same `-p no:`: the same one
    assert prebuilt.built() == 1
    assert prebuilt.use(["c.py", "-p", "no:doctest"])
    monkeypatch.chdir(tmp_path)
    config = pytest_config.get_config(["c.py", "-p", "no:doctest"], None, prog=prebuilt.PROG)
    assert config.invocation_params.args == ("c.py", "-p", "no:doctest")
    assert config.invocation_params.dir == tmp_path
    assert config.pluginmanager.is_blocked("doctest")
    assert config.pluginmanager.has_plugin("junitxml")
    again = pytest_config.get_config(["c.py", "-p", "no:doctest"], None, prog=prebuilt.PROG)
    assert again is not config  # a nested session builds its own


def test_other_arguments_get_a_config_of_their_own(restore_get_config: None) -> None:
    prebuilt.prepare(["a.py", "-p", "no:doctest"])
    assert prebuilt.use(["a.py", "-p", "no:doctest"])
    config = pytest_config.get_config(["a.py"], None, prog=prebuilt.PROG)
    assert not config.pluginmanager.is_blocked("doctest")
    assert not prebuilt.use(["a.py"])  # nothing was prebuilt for these


def test_a_config_that_fails_to_build_is_left_to_the_child(restore_get_config: None) -> None:
    assert prebuilt.prepare(["a.py", "-p", "no:main"])
    assert prebuilt.built() == 0
    assert not prebuilt.use(["a.py", "-p", "no:main"])


PROBE = """
import json, os
import pytest
from buildtool.isolation import snapshot

@pytest.mark.isolated(env={"STARTUP_PROBE": "1"})
def test_probe(request):
    manager = request._fixturemanager
    config = request.config
    table = {
        name: sorted(
            f"{d.baseid}:{d.func.__module__}.{d.func.__qualname__}"
            for defs in per_node.values() for d in defs
        )
        for name, per_node in manager._arg2node2fixturedefs.items()
    }
    record = {
        "fixtures": table,
        "autouse": sorted(n for names in manager._node_autousenames.values() for n in names),
        "plugins": sorted(
            "(unnamed)" if name.isdigit() else name  # named by id(): differs by process
            for name, p in config.pluginmanager.list_name_plugin() if p
        ),
        "blocked": config.pluginmanager.is_blocked("junitxml"),
        "ini_markers": len(config.getini("markers")),
        "args": list(config.invocation_params.args)[1:],
        "cwd": str(config.invocation_params.dir),
        "options": sorted(vars(config.option)),
        "hook_order": {
            hook: [
                "(unnamed)" if impl.plugin_name.isdigit() else impl.plugin_name
                for impl in getattr(config.hook, hook).get_hookimpls()
            ]
            for hook in ("pytest_runtest_logreport", "pytest_collection", "pytest_configure")
        },
        "resumed": snapshot.resumed(),
    }
    with open(os.environ["PROBE_OUT"], "w") as fh:
        json.dump(record, fh)
"""


def _probe(pytester: pytest.Pytester, launcher: str) -> dict[str, Any]:
    out = pytester.path / f"probe-{launcher}.json"
    pytester.makeini(
        "[pytest]\nmarkers =\n    extra_marker: one more\nisolated_timeout = 120\n"
        "filterwarnings = ignore::pytest.PytestAssertRewriteWarning\n"
    )
    pytester.makepyfile(test_probe=PROBE.replace('"1"}', f'"1", "PROBE_OUT": {str(out)!r}}}'))
    rec = pytester.inline_run(f"--isolated-launcher={launcher}", "-p", "no:junitxml")
    rec.assertoutcome(passed=1)
    record: dict[str, Any] = json.loads(out.read_text())
    record["args"] = [a for a in record["args"] if not a.startswith("--basetemp")]
    return record


def test_a_forked_child_starts_pytest_as_a_spawned_one(pytester: pytest.Pytester) -> None:
    forked = _probe(pytester, "forkserver")
    spawned = _probe(pytester, "spawn")
    assert forked["fixtures"]["tmp_path"]  # the probe saw pytest's own fixtures
    assert forked["blocked"] is True  # the parent's -p no:junitxml reached the child
    assert forked.pop("resumed") is True  # started from the fork server's snapshot
    assert spawned.pop("resumed") is False
    assert "(unnamed)" in forked["hook_order"]["pytest_runtest_logreport"]  # the reporter
    assert forked == spawned


COUNTING_CONFTEST = """
import json, os
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector, name, obj):
    items = yield
    out = os.environ.get("ITEMS_OUT")
    if out and name.startswith("test_"):
        built = items if isinstance(items, list) else [items]
        with open(out, "a") as fh:
            fh.write(json.dumps([item.name for item in built if item is not None]) + "\\n")
    return items
"""


def test_a_child_builds_only_its_own_parametrized_item(pytester: pytest.Pytester) -> None:
    out = pytester.path / "items.jsonl"
    pytester.makeconftest(COUNTING_CONFTEST)
    pytester.makepyfile(
        test_many=f"""
import os
import pytest

@pytest.fixture(params=["p", "q"])
def letter(request):
    return request.param

@pytest.mark.isolated(env={{"ITEMS_OUT": {str(out)!r}}})
@pytest.mark.parametrize("n", range(30))
def test_many(n, letter):
    assert (n, letter) != (7, "q")  # this one fails: its own parameters reached it

def test_other():
    pass
"""
    )
    rec = pytester.inline_run("-k", "test_many and (3 or 7)")
    passed = sorted(
        r.nodeid.split("::")[1] for r in rec.getreports() if r.when == "call" and r.passed
    )
    failed = sorted(
        r.nodeid.split("::")[1] for r in rec.getreports() if r.when == "call" and r.failed
    )
    assert failed == ["test_many[q-7]"]
    assert len(passed) == 11 and "test_many[p-3]" in passed and "test_many[q-23]" in passed
    built = [json.loads(line) for line in out.read_text().splitlines()]
    # What each of the 12 children built for the module's two functions: its own item (of 60)
    # and the other function's.
    assert len(built) == 24
    assert sorted(len(names) for names in built) == [1] * 24
    assert sum(names == ["test_other"] for names in built) == 12


VISITING_CONFTEST = """
import os

def _note(path):
    out = os.environ.get("VISITED_OUT")
    if out:
        with open(out, "a") as fh:
            fh.write(os.path.relpath(str(path)) + "\\n")

def pytest_collect_file(file_path, parent):
    _note(file_path)

def pytest_collect_directory(path, parent):
    _note(path)
"""


def test_a_child_walks_only_the_path_to_its_test_file(pytester: pytest.Pytester) -> None:
    out = pytester.path / "visited.txt"
    pytester.makeconftest(VISITING_CONFTEST)
    for sibling in ("alpha", "beta"):
        pytester.mkdir(sibling)
        (pytester.path / sibling / "test_side.py").write_text("def test_side():\n    pass\n")
    pytester.mkdir("inner")
    (pytester.path / "inner" / "test_before.py").write_text("def test_before():\n    pass\n")
    (pytester.path / "inner" / "test_target.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.isolated(env={{'VISITED_OUT': {str(out)!r}}})\n"
        "def test_target():\n    pass\n"
    )
    rec = pytester.inline_run("inner/test_target.py")
    rec.assertoutcome(passed=1)
    visited = out.read_text().split()
    # The child made no node for the siblings pytest would have dropped; it still found its own.
    assert "inner" in visited and os.path.join("inner", "test_target.py") in visited
    assert not {"alpha", "beta", os.path.join("inner", "test_before.py")} & set(visited)
