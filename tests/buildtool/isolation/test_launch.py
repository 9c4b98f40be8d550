"""Launcher choice, interpreter flags, the bytecode cache and the options passed to children."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from buildtool.isolation import launch, settings
from buildtool.isolation.forkserver import project_modules
from buildtool.isolation.settings import _passthrough


def test_fork_server_where_fork_is_safe_spawn_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert settings.default_launcher() == "forkserver"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert settings.default_launcher() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delattr(os, "fork")
    assert settings.default_launcher() == "spawn"


def test_no_bytecode_parent_gives_children_a_private_cache(tmp_path: Path) -> None:
    flags = launch.interpreter_flags(tmp_path / "cache")
    if sys.flags.dont_write_bytecode and not sys.pycache_prefix:
        assert flags[:2] == ["-X", f"pycache_prefix={tmp_path / 'cache'}"]
    assert "-B" not in flags


def test_bytecode_cache_is_private_or_falls_back(tmp_path: Path) -> None:
    cache = launch.bytecode_cache(tmp_path / "fallback")
    info = cache.stat()
    if cache != tmp_path / "fallback":
        assert info.st_uid == os.getuid() and not info.st_mode & 0o022


def test_bytecode_cache_refuses_a_directory_others_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launch.tempfile, "gettempdir", lambda: str(tmp_path))
    shared = tmp_path / f"pytest-isolated-pycache-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    assert launch.bytecode_cache(tmp_path / "fallback") == tmp_path / "fallback"


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["-p", "pytester", "-x", "tests"], ["-p", "pytester"]),
        (["-pno:randomly", "-Werror", "-k", "foo"], ["-pno:randomly", "-Werror"]),
        (["--import-mode=importlib", "-o", "x=1"], ["--import-mode=importlib", "-o", "x=1"]),
        (["-W", "error", "--noconftest", "-n", "4"], ["-W", "error", "--noconftest"]),
        (["-p"], []),
    ],
)
def test_options_passed_to_children(args: list[str], kept: list[str]) -> None:
    assert list(_passthrough(args)) == kept


def test_project_modules_sees_modules_under_the_root_only(tmp_path: Path) -> None:
    module = tmp_path / "my_settings_module.py"
    module.write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import my_settings_module  # noqa: F401

        assert "my_settings_module" in project_modules(tmp_path)
        assert "pytest" not in project_modules(Path(pytest.__file__).parents[1])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("my_settings_module", None)
