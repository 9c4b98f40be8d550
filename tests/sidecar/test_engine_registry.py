"""The engine registry is the one list of engines: the command line, the console scripts, the
enforcement messages and the image targets all follow `sidecar.engines.ENGINES`."""

from __future__ import annotations

import argparse
import importlib
import tomllib
from pathlib import Path
from typing import Any, ClassVar

import pytest

from buildtool.images.targets import SIDECARS
from sidecar import cli, enforcement
from sidecar.engines import ENGINES
from sidecar.engines.base import CompletionsAdapter

ROOT = Path(__file__).resolve().parents[2]


def test_each_entry_is_named_by_its_adapter_kind_and_says_how_to_enforce() -> None:
    for name, adapter in ENGINES.items():
        assert adapter.kind == name
        assert adapter.enforcement_fix.strip(), name
    assert set(enforcement.FIXES) == set(ENGINES)


def test_every_engine_has_its_console_script_and_nothing_else_does() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    engine_scripts = {k: v for k, v in scripts.items() if k.startswith("sidecar-")}
    assert engine_scripts == {f"sidecar-{n}": f"sidecar.cli:main_{n}" for n in ENGINES}
    for target in engine_scripts.values():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), target


def test_every_image_runs_a_registered_engine() -> None:
    assert set(SIDECARS) <= set(ENGINES)


class _Echo(CompletionsAdapter):
    kind: ClassVar[str] = "echo"
    enforcement_fix: ClassVar[str] = "start echo with --guided"

    def __init__(self, *, loud: bool = False) -> None:
        self.loud = loud

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--echo-loud", action="store_true")

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> _Echo:
        return cls(loud=args.echo_loud)

    def guided_fields(self, schema: Any) -> dict[str, Any]:
        return {"schema": schema}


def test_one_registry_line_adds_an_engine_to_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(ENGINES, "echo", _Echo)
    argv = ["--engine-url", "http://127.0.0.1:9", "--model", "m", "--echo-loud"]
    args = cli._parser(None).parse_args(["echo", *argv])
    adapter = cli.make_adapter(args.engine, args)
    assert isinstance(adapter, _Echo) and adapter.loud
    assert callable(cli.main_echo)  # type: ignore[attr-defined]  # the `sidecar-echo` script
    with pytest.raises(SystemExit):
        cli._parser(None).parse_args(["nope", *argv])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(AttributeError):
        _ = cli.main_nope  # type: ignore[attr-defined]
