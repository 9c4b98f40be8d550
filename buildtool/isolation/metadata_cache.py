"""Installed-package metadata read once by the fork server, reused by each child's pytest startup.

Every pytest session reads the metadata of every installed distribution twice while it starts
(entry points, to autoload `pytest11` plugins and to mark their packages for assertion
rewriting): a few milliseconds per child, re-reading the same files. The fork server installs
this cache before its warm-up session, so the files pytest reads there are in memory when it
forks; each child keeps using it only until its plugins are loaded (`EndOfStartup`, at
`pytest_load_initial_conftests`), then puts the standard reader back: conftests, fixtures and the
test itself read metadata from disk, as in any pytest run.

A cached file is used only while its distribution's metadata directory is the same directory
with the same modification time: a package installed, removed or reinstalled since the server
started creates or replaces that directory, and is read afresh.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
from typing import Any

import pytest

_Signature = tuple[int, int, int]  # device, inode, mtime (ns) of the metadata directory

_original = importlib.metadata.PathDistribution.read_text
_cache: dict[tuple[str, str], tuple[_Signature, str | None]] = {}


def _signature(path: pathlib.Path) -> _Signature | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


def _cached_read_text(
    self: importlib.metadata.PathDistribution, filename: str | os.PathLike[str]
) -> str | None:
    path: Any = getattr(self, "_path", None)
    if not isinstance(path, pathlib.Path):  # e.g. a zip file's metadata: read as usual
        return _original(self, filename)
    signature = _signature(path)
    if signature is None:
        return _original(self, filename)
    key = (str(path), os.fspath(filename))
    found = _cache.get(key)
    if found is not None and found[0] == signature:
        return found[1]
    text = _original(self, filename)
    _cache[key] = (signature, text)
    return text


def install() -> None:
    """Serve distribution metadata files from memory (the fork server, before warming up)."""
    importlib.metadata.PathDistribution.read_text = _cached_read_text  # type: ignore[method-assign]


def uninstall() -> None:
    """Read distribution metadata from disk again (idempotent; a no-op where never installed)."""
    importlib.metadata.PathDistribution.read_text = _original  # type: ignore[method-assign]


def installed() -> bool:
    return importlib.metadata.PathDistribution.read_text is _cached_read_text


class EndOfStartup:
    """Child plugin: plugins are loaded by now; from here on metadata is read from disk."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self) -> None:
        uninstall()
