"""Installed-package metadata read once by the fork server, reused by each child's pytest startup.

Every pytest session reads the metadata of every installed distribution twice while it starts
(entry points, to autoload `pytest11` plugins and to mark their packages for assertion
rewriting): a few milliseconds per child, re-reading the same files. The fork server installs
this cache before its warm-up session, so the files pytest reads there are in memory when it
forks; each child keeps using it only until its plugins are loaded (`EndOfStartup`, at
`pytest_load_initial_conftests`), then puts the standard reader back: conftests, fixtures and the
test itself read metadata from disk, as in any pytest run.

Cached alongside the files: each distribution's entry points as parsed, and its `files` (the
RECORD as path objects, hundreds per package). Everything cached is used only while
its distribution's metadata directory is the same directory with the same modification time: a
package installed, removed or reinstalled since the server started creates or replaces that
directory, and is read afresh.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

import pytest

_T = TypeVar("_T")
_Signature = tuple[int, int, int]  # device, inode, mtime (ns) of the metadata directory

_original = importlib.metadata.PathDistribution.read_text
_original_entry_points = importlib.metadata.Distribution.entry_points
_original_files = importlib.metadata.Distribution.files
_cache: dict[tuple[str, str], tuple[_Signature, Any]] = {}


def _signature(path: pathlib.Path) -> _Signature | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


def _cached(dist: importlib.metadata.Distribution, what: str, read: Callable[[], _T]) -> _T:
    """`read()` (something derived from `dist`'s metadata files), once per metadata directory."""
    path: Any = getattr(dist, "_path", None)
    if not isinstance(path, pathlib.Path):  # e.g. a zip file's metadata: read as usual
        return read()
    signature = _signature(path)
    if signature is None:
        return read()
    key = (str(path), what)
    found = _cache.get(key)
    if found is not None and found[0] == signature:
        return cast(_T, found[1])
    value = read()
    _cache[key] = (signature, value)
    return value


def _cached_read_text(
    self: importlib.metadata.PathDistribution, filename: str | os.PathLike[str]
) -> str | None:
    return _cached(self, os.fspath(filename), lambda: _original(self, filename))


def _cached_entry_points(self: importlib.metadata.Distribution) -> Any:
    # Parsed once: entry points are immutable, and read by both of pytest's passes.
    return _cached(self, " entry points", lambda: _original_entry_points.fget(self))  # type: ignore[attr-defined]


def _cached_files(self: importlib.metadata.Distribution) -> Any:
    # The RECORD parsed into path objects: hundreds per package, for pytest's rewrite marking.
    files = _cached(self, " files", lambda: _original_files.fget(self))  # type: ignore[attr-defined]
    return None if files is None else list(files)


def install() -> None:
    """Serve distribution metadata from memory (the fork server, before warming up)."""
    importlib.metadata.PathDistribution.read_text = _cached_read_text  # type: ignore[method-assign]
    importlib.metadata.Distribution.entry_points = property(_cached_entry_points)  # type: ignore[method-assign,assignment]
    importlib.metadata.Distribution.files = property(_cached_files)  # type: ignore[method-assign,assignment]


def uninstall() -> None:
    """Read distribution metadata from disk again (idempotent; a no-op where never installed)."""
    importlib.metadata.PathDistribution.read_text = _original  # type: ignore[method-assign]
    importlib.metadata.Distribution.entry_points = _original_entry_points  # type: ignore[method-assign]
    importlib.metadata.Distribution.files = _original_files  # type: ignore[method-assign]


def installed() -> bool:
    return importlib.metadata.PathDistribution.read_text is _cached_read_text


class EndOfStartup:
    """Child plugin: plugins are loaded by now; from here on metadata is read from disk."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self) -> None:
        uninstall()
