"""The accelerators: which are on for a run, after checking the private internals each relies on.

Each accelerator reaches into a private part of pytest or Python (docs/testing.md, "Private
APIs", lists every one with the versions it was tested on). Before a run uses any of them (the
parent, at its first isolated test), `select` checks for
each requested one that the running pytest and Python are in the tested range and that its
internals exist *and behave as expected* (a small probe of the real internal, not only an
attribute lookup). One that fails is off for the run: the plain path does its job, and the
caller warns once, naming it and why. The parent passes the list that passed down to its fork
servers and children, which use exactly those.

`--isolated-plain` (ini `isolated_plain`) asks for none: a plain fork server (or spawn) with no
private API use beyond what pytest-xdist relies on.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import marshal
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

# In the order a child meets them.
NAMES: tuple[str, ...] = (
    "pyc_reader",
    "metadata_cache",
    "prebuilt",
    "snapshot",
    "fixture_scan",
    "own_call",
)
# The pytest releases these were tested on: >= first, < second (also the package metadata's
# range for pytest, checked by tests/buildtool/isolation/test_accelerators.py).
TESTED_PYTEST = ("9.2", "9.3")
TESTED_PYTHON = ((3, 11),)  # importlib.metadata and marshal as tested


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    return tuple(parts)


def version_problem(pytest_version: str | None = None) -> str | None:
    """Why the running pytest/Python is outside the tested range (None: inside)."""
    version = pytest.__version__ if pytest_version is None else pytest_version
    low, high = (_version_tuple(v) for v in TESTED_PYTEST)
    if not low <= _version_tuple(version) < high:
        return (
            f"pytest {version} is outside the tested range >={TESTED_PYTEST[0]},<{TESTED_PYTEST[1]}"
        )
    if sys.version_info[:2] not in TESTED_PYTHON:
        return f"Python {sys.version_info[0]}.{sys.version_info[1]} was not tested"
    return None


def _check_pyc_reader() -> None:
    from _pytest.assertion import rewrite

    from buildtool.isolation import pyc_reader

    if getattr(rewrite, "marshal", None) is not marshal and not pyc_reader.installed():
        raise RuntimeError("_pytest.assertion.rewrite no longer uses the marshal module")
    source = b"def probe():\n    return 42\n"
    code = compile(source, "probe.py", "exec")
    with tempfile.TemporaryDirectory() as tmp:
        src, pyc = Path(tmp, "probe.py"), Path(tmp, "probe.pyc")
        src.write_bytes(source)
        with open(pyc, "wb") as fp:
            rewrite._write_pyc_fp(fp, importlib.util.source_hash(source), code)
        installed = pyc_reader.installed()
        pyc_reader.install()
        try:
            read = rewrite._read_pyc(src, pyc)
        finally:
            if not installed:
                pyc_reader.uninstall()
    if read != code:
        raise RuntimeError("pytest's _read_pyc did not read back its own pyc through marshal.load")


def _check_metadata_cache() -> None:
    from buildtool.isolation import metadata_cache

    dist = importlib.metadata.distribution("pytest")
    if not isinstance(getattr(dist, "_path", None), Path):
        raise RuntimeError("importlib.metadata.PathDistribution has no _path directory")
    for name in ("entry_points", "files"):
        if not isinstance(inspect.getattr_static(importlib.metadata.Distribution, name), property):
            raise RuntimeError(f"Distribution.{name} is no longer a property")
    plain = (dist.read_text("METADATA"), list(dist.entry_points), dist.files)
    installed = metadata_cache.installed()
    metadata_cache.install()
    try:
        fresh = importlib.metadata.distribution("pytest")
        cached = [(fresh.read_text("METADATA"), list(fresh.entry_points), fresh.files)] * 2
        again = importlib.metadata.distribution("pytest")
        cached[1] = (again.read_text("METADATA"), list(again.entry_points), again.files)
    finally:
        if not installed:
            metadata_cache.uninstall()
    if cached[0] != plain or cached[1] != plain:
        raise RuntimeError("the cached metadata differs from importlib.metadata's own")


def _check_prebuilt() -> None:
    from _pytest import config as pytest_config

    from buildtool.isolation import prebuilt

    signature = inspect.signature(pytest_config.get_config)
    if list(signature.parameters)[:2] != ["args", "plugins"] or "prog" not in signature.parameters:
        raise RuntimeError(f"_pytest.config.get_config has another signature: {signature}")
    if "get_config(" not in inspect.getsource(pytest_config._prepareconfig):
        raise RuntimeError("pytest.main no longer builds its config with get_config")
    config = prebuilt._original_get_config(["-p", "no:doctest"], None, prog=prebuilt.PROG)
    if not isinstance(config, pytest.Config) or not config.pluginmanager.is_blocked("doctest"):
        raise RuntimeError("get_config did not build a Config honouring -p no:")
    params = pytest.Config.InvocationParams(args=(), plugins=None, dir=Path.cwd())
    config.invocation_params = params
    if config.invocation_params is not params:
        raise RuntimeError("Config.invocation_params can no longer be set")


def _check_snapshot() -> None:
    manager = pytest.PytestPluginManager
    signature = inspect.signature(manager.import_plugin)
    if list(signature.parameters) != ["self", "modname", "consider_entry_points"]:
        raise RuntimeError(f"PytestPluginManager.import_plugin has another signature: {signature}")
    from _pytest import hookspec

    spec = inspect.signature(hookspec.pytest_load_initial_conftests)
    if set(spec.parameters) != {"early_config", "parser", "args"}:
        raise RuntimeError(f"pytest_load_initial_conftests has other arguments: {spec}")
    source = inspect.getsource(pytest.Config.parse)
    if "known_args_namespace" not in source or "pytest_load_initial_conftests" not in source:
        raise RuntimeError("Config.parse no longer parses early options before the conftests")
    parser = pytest.Parser(_ispytest=True)
    parser.addoption("--probe", default=None)
    if parser.parse_known_args(["--probe=1"]).probe != "1":
        raise RuntimeError("Parser.parse_known_args no longer reads the early options")


def _check_fixture_scan() -> None:
    from _pytest import fixtures

    from buildtool.isolation import fixture_scan

    if not fixture_scan.supported():
        raise RuntimeError("FixtureManager lacks _lookup_in_type_dict/_find_wrapped_fixture_def")
    if "dir(" not in inspect.getsource(fixtures.FixtureManager.parsefactories):
        raise RuntimeError("FixtureManager.parsefactories no longer scans dir(holder)")
    probe = fixture_scan.probe_module()
    if fixture_scan.names_to_scan(probe) != ["hidden_fixture", "plain_fixture"]:
        raise RuntimeError("pytest's checks no longer tell fixtures from other attributes")


def _check_own_call() -> None:
    from _pytest.python import CallSpec

    if "self._calls" not in inspect.getsource(pytest.Metafunc.__init__):
        raise RuntimeError("Metafunc no longer keeps its calls in _calls")
    from _pytest.python import PyCollector

    call = CallSpec()
    if tuple(call._idlist) != () or call.id != "":
        raise RuntimeError("CallSpec no longer names a call from its _idlist")
    if 'f"{name}[{callspec.id}]" if callspec._idlist' not in inspect.getsource(
        PyCollector._genfunctions
    ):
        raise RuntimeError("pytest names a parametrized call's item another way")


CHECKS: dict[str, Callable[[], None]] = {
    "pyc_reader": _check_pyc_reader,
    "metadata_cache": _check_metadata_cache,
    "prebuilt": _check_prebuilt,
    "snapshot": _check_snapshot,
    "fixture_scan": _check_fixture_scan,
    "own_call": _check_own_call,
}


def problem(name: str) -> str | None:
    """Why accelerator `name` cannot be used in this process (None: it can)."""
    version = version_problem()
    if version is not None:
        return version
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a deprecation on the way is a change too
            CHECKS[name]()
    except Exception as exc:  # any way a changed internal shows up: off, with why
        return " ".join(str(exc).split()) or type(exc).__name__
    return None


def select(requested: Iterable[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The requested accelerators that pass their checks, and why each other one is off."""
    on: list[str] = []
    off: dict[str, str] = {}
    for name in requested:
        why = problem(name)
        if why is None:
            on.append(name)
        else:
            off[name] = why
    return tuple(on), off


def describe_off(off: dict[str, str]) -> str:
    """The one warning line for the accelerators turned off."""
    reasons: dict[str, list[str]] = {}
    for name, why in off.items():
        reasons.setdefault(why, []).append(name)
    text = "; ".join(f"{', '.join(names)} ({why})" for why, names in reasons.items())
    return f"isolated: accelerators off for this run, their plain path used instead: {text}"


def parse(text: str) -> tuple[str, ...]:
    """`all`, `none`, or a comma-separated list of names (an unknown one is a usage error)."""
    value = text.strip()
    if value in ("", "all"):
        return NAMES
    if value == "none":
        return ()
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise pytest.UsageError(
            f"isolated_accelerators: unknown {', '.join(unknown)}; known: {', '.join(NAMES)}"
        )
    return tuple(name for name in NAMES if name in names)
