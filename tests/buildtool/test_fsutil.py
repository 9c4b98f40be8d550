"""The shared atomic replace/remove helpers: what ends up at the path, and no temporary left."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from buildtool import fsutil


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_replace_file_writes_bytes_mode_and_times_and_leaves_no_temp(tmp_path: Path) -> None:
    dst = tmp_path / "f"
    dst.write_bytes(b"old")
    fsutil.replace_file(dst, b"new bytes", mode=0o751, times_ns=(1_000, 2_000_000_000))
    st = dst.stat()
    assert dst.read_bytes() == b"new bytes"
    assert stat.S_IMODE(st.st_mode) == 0o751
    assert st.st_mtime_ns == 2_000_000_000
    assert names(tmp_path) == ["f"]


def test_replace_file_streams_from_a_writer_and_durable_works(tmp_path: Path) -> None:
    dst = tmp_path / "f"
    fsutil.replace_file(dst, lambda fd: fsutil.write_all(fd, b"x" * 300_000), durable=True)
    assert dst.read_bytes() == b"x" * 300_000
    assert names(tmp_path) == ["f"]


def test_a_failing_writer_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    dst = tmp_path / "f"
    dst.write_bytes(b"old")

    def broken(fd: int) -> None:
        os.write(fd, b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        fsutil.replace_file(dst, broken)
    assert dst.read_bytes() == b"old"
    assert names(tmp_path) == ["f"]


def test_a_folder_in_the_way_is_replaced_only_when_asked(tmp_path: Path) -> None:
    dst = tmp_path / "d"
    (dst / "inner").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        fsutil.replace_file(dst, b"data")
    assert names(tmp_path) == ["d"] and dst.is_dir()
    fsutil.replace_file(dst, b"data", clear_dir=True)
    assert dst.read_bytes() == b"data"
    fsutil.replace_symlink(tmp_path / "l", "d")
    (tmp_path / "e").mkdir()
    fsutil.replace_symlink(tmp_path / "e", b"d", clear_dir=True)
    assert os.readlink(tmp_path / "e") == "d" and os.readlink(tmp_path / "l") == "d"
    assert names(tmp_path) == ["d", "e", "l"]


def test_temp_names_are_short_whatever_the_file_is_called(tmp_path: Path) -> None:
    long_name = "n" * 255  # the longest name a folder allows: a suffix would not fit
    fsutil.replace_file(tmp_path / long_name, b"ok")
    assert (tmp_path / long_name).read_bytes() == b"ok"
    assert len(os.path.basename(fsutil.temp_path(tmp_path / long_name))) < 32


def test_remove_path_and_ensure_dir_take_any_kind(tmp_path: Path) -> None:
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "f").write_text("x")
    (tmp_path / "link").symlink_to("tree")
    fsutil.remove_path(tmp_path / "link")  # the link only, never what it points to
    assert (tmp_path / "tree" / "sub" / "f").exists()
    fsutil.remove_path(tmp_path / "tree")
    fsutil.remove_path(tmp_path / "missing")
    assert names(tmp_path) == []
    (tmp_path / "x").write_text("file where a folder goes")
    fsutil.ensure_dir(tmp_path / "x")
    assert (tmp_path / "x").is_dir() and not (tmp_path / "x").is_symlink()
