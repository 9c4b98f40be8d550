"""The plugin's settings, read once at configure time into a frozen object, and its state.

Light on purpose: the plugin module imports this for every pytest session of every project
that has the package installed; the machinery that runs isolated tests (`parent`, `launch`...)
is imported only when a test is marked isolated.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import pytest

if TYPE_CHECKING:
    from buildtool.isolation.launch import Launchers

Launcher = Literal["forkserver", "spawn"]


class IsolationWarning(pytest.PytestWarning):
    """The isolation plugin changed how it runs (the fork server gave way to spawn, an
    accelerator turned itself off)."""


def default_launcher() -> Launcher:
    """Fork where fork is safe and cheap (Linux and the BSDs); spawn elsewhere (macOS, Windows)."""
    if hasattr(os, "fork") and sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return "forkserver"
    return "spawn"


@dataclass(frozen=True)
class Settings:
    """Read once at configure time; the plugin never reads os.environ afterwards."""

    launcher: Launcher
    timeout: float
    preload: tuple[str, ...]
    max_servers: int
    snapshot: bool
    parent_environ: dict[str, str]
    inherit: tuple[str, ...]  # ini isolated_inherit: more parent variables children get
    accelerators: tuple[str, ...]  # requested (--isolated-plain: none); checked before use
    passthrough: tuple[str, ...]  # parent command-line options the child needs too


@dataclass
class State:
    settings: Settings
    workdir: Path | None = None
    launchers: Launchers | None = None
    count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


STATE = pytest.StashKey[State]()


def inherited_names(settings: Settings) -> tuple[str, ...]:
    """The parent variables `isolated_inherit` names (exact names or glob patterns)."""
    return tuple(
        name
        for name in settings.parent_environ
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in settings.inherit)
    )


def _passthrough(args: Sequence[str]) -> tuple[str, ...]:
    """Options of the parent's command line that shape how the child loads tests."""
    with_value = {"-p", "-W", "--pythonwarnings", "-o", "--override-ini", "--import-mode"}
    kept: list[str] = []
    items = list(args)
    index = 0
    while index < len(items):
        arg = items[index]
        index += 1
        if arg in with_value and index < len(items):
            kept += [arg, items[index]]
            index += 1
            continue
        joined = arg.split("=", 1)[0] in with_value and "=" in arg
        short = arg[:2] in ("-p", "-W", "-o") and len(arg) > 2 and not arg.startswith("--")
        if joined or short or arg == "--noconftest":
            kept.append(arg)
    return tuple(kept)


def _early_option(config: pytest.Config, name: str) -> Any:
    """An option's value, also before pytest has filled `config.option` (at its startup)."""
    namespace = getattr(config, "known_args_namespace", None)
    value = getattr(namespace, name, None)
    return value if value is not None else config.getoption(name, None)


def requested_accelerators(config: pytest.Config) -> tuple[str, ...]:
    """The accelerators the options ask for: none under --isolated-plain / ini isolated_plain;
    else --isolated-accelerators / ini isolated_accelerators (default all); the snapshot not
    when ini isolated_snapshot is false."""
    from buildtool.isolation.accelerators import parse

    if _early_option(config, "isolated_plain") or config.getini("isolated_plain"):
        return ()
    text = _early_option(config, "isolated_accelerators") or config.getini("isolated_accelerators")
    names = parse(str(text))
    if not config.getini("isolated_snapshot"):
        names = tuple(name for name in names if name != "snapshot")
    return names


def read(config: pytest.Config) -> Settings:
    launcher = config.getoption("isolated_launcher") or str(config.getini("isolated_launcher"))
    if launcher not in ("auto", "forkserver", "spawn"):
        raise pytest.UsageError(
            f"isolated_launcher: expected auto, forkserver or spawn, got {launcher!r}"
        )
    if launcher == "forkserver" and default_launcher() != "forkserver":
        raise pytest.UsageError("--isolated-launcher=forkserver: fork is not available here")
    timeout_text = config.getoption("isolated_timeout") or config.getini("isolated_timeout")
    try:
        timeout = float(timeout_text)
        max_servers = int(str(config.getini("isolated_max_servers")))
    except ValueError as exc:
        raise pytest.UsageError(f"isolated_timeout / isolated_max_servers: {exc}") from None
    if timeout <= 0:
        raise pytest.UsageError(f"isolated_timeout must be positive, got {timeout_text!r}")
    return Settings(
        launcher=default_launcher() if launcher == "auto" else cast(Launcher, launcher),
        timeout=timeout,
        preload=tuple(cast(list[str], config.getini("isolated_preload"))),
        max_servers=max_servers,
        snapshot=bool(config.getini("isolated_snapshot")),
        parent_environ=dict(os.environ),
        inherit=tuple(cast(list[str], config.getini("isolated_inherit"))),
        accelerators=requested_accelerators(config),
        passthrough=_passthrough(config.invocation_params.args),
    )
