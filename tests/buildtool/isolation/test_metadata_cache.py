"""The fork server's metadata cache: same text as the disk, re-read when a package changes,
and gone from a child before its conftests and its test run."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildtool.isolation import metadata_cache


@pytest.fixture
def cache() -> Iterator[None]:
    metadata_cache.install()
    try:
        yield
    finally:
        metadata_cache.uninstall()


def _dist(root: Path, entry_points: str) -> importlib.metadata.PathDistribution:
    info = root / "probe_pkg-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return importlib.metadata.PathDistribution(info)


def test_cached_text_is_the_file_text_and_missing_stays_missing(
    tmp_path: Path, cache: None
) -> None:
    dist = _dist(tmp_path, "[pytest11]\nprobe = probe_pkg.plugin\n")
    assert [ep.name for ep in dist.entry_points] == ["probe"]
    assert [ep.name for ep in dist.entry_points] == ["probe"]  # now from memory
    assert dist.read_text("RECORD") is None
    assert dist.metadata["Name"] == "probe-pkg"


def test_a_reinstalled_package_is_read_afresh(tmp_path: Path, cache: None) -> None:
    dist = _dist(tmp_path, "[pytest11]\nold = probe_pkg.old\n")
    assert [ep.name for ep in dist.entry_points] == ["old"]
    info = tmp_path / "probe_pkg-1.0.dist-info"
    # A reinstall replaces the directory (new inode, new mtime).
    for child in info.iterdir():
        child.unlink()
    info.rmdir()
    dist = _dist(tmp_path, "[pytest11]\nnew = probe_pkg.new\n")
    os.utime(info, ns=(1, 1))  # even with an old mtime, the directory is another one
    assert [ep.name for ep in dist.entry_points] == ["new"]


def test_a_changed_metadata_directory_is_read_afresh(tmp_path: Path, cache: None) -> None:
    dist = _dist(tmp_path, "[pytest11]\nold = probe_pkg.old\n")
    assert [ep.name for ep in dist.entry_points] == ["old"]
    info = tmp_path / "probe_pkg-1.0.dist-info"
    (info / "entry_points.txt").write_text("[pytest11]\nnew = probe_pkg.new\n")
    (info / "INSTALLER").write_text("pip\n")  # what an install into it does: mtime changes
    os.utime(info, ns=(10**18, 10**18))
    assert [ep.name for ep in dist.entry_points] == ["new"]


def test_uninstall_restores_the_standard_reader(tmp_path: Path) -> None:
    metadata_cache.install()
    assert metadata_cache.installed()
    metadata_cache.uninstall()
    metadata_cache.uninstall()  # idempotent
    assert not metadata_cache.installed()
    dist = _dist(tmp_path, "[pytest11]\nx = y\n")
    assert dist.read_text("entry_points.txt") == "[pytest11]\nx = y\n"


@pytest.mark.isolated(env={"ISOLATION_METADATA_PROBE": "1"})
def test_an_isolated_test_reads_metadata_from_disk() -> None:
    # Whatever launcher ran us, the cache ended with pytest's startup, before this module.
    assert not metadata_cache.installed()
    assert importlib.metadata.version("pytest")


def test_entry_points_and_files_are_those_on_disk_and_follow_a_reinstall(
    tmp_path: Path, cache: None
) -> None:
    dist = _dist(tmp_path, "[pytest11]\nprobe = probe_pkg.plugin\n")
    info = tmp_path / "probe_pkg-1.0.dist-info"
    (tmp_path / "probe_pkg").mkdir()
    (tmp_path / "probe_pkg" / "__init__.py").write_text("")
    (info / "RECORD").write_text("probe_pkg/__init__.py,,\nprobe_pkg/more.py,,\n")
    files = dist.files
    assert files is not None and [str(f) for f in files] == [
        "probe_pkg/__init__.py",
        "probe_pkg/more.py",
    ]
    assert len(dist.files or []) == 2  # from memory
    files.clear()  # a caller changing its list changes no one else's
    assert dist.files
    assert [(ep.group, ep.name) for ep in dist.entry_points] == [("pytest11", "probe")]
    (info / "entry_points.txt").write_text("[pytest11]\nother = probe_pkg.other\n")
    (info / "RECORD").write_text("probe_pkg/__init__.py,,\n")
    os.utime(info, ns=(10**18, 10**18))  # what an install into it does
    assert [ep.name for ep in dist.entry_points] == ["other"]
    assert [str(f) for f in dist.files or []] == ["probe_pkg/__init__.py"]
