"""The tool-owned build context: synced by content, so BuildKit's size+mtime check never misses.

BuildKit sends a context file only when its size or mtime differ from the copy it kept. These
tests edit files the way that fools it (same size, mtime put back) and check that the synced copy
has the new bytes AND a stat BuildKit will see as changed, while unchanged files keep theirs.
"""

from __future__ import annotations

import os
from pathlib import Path

from buildtool.images import context

WHITELIST = "*\n!pkg/\n!pyproject.toml\n**/__pycache__\n"


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "pkg" / "sub").mkdir(parents=True)
    (ws / "pkg" / "a.py").write_text("A = 1\n")
    (ws / "pkg" / "sub" / "b.py").write_text("B = 2\n")
    (ws / "pkg" / "__pycache__").mkdir()
    (ws / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"pyc")
    (ws / "pyproject.toml").write_text("[project]\n")
    (ws / "Dockerfile").write_text("FROM x\n")
    (ws / ".dockerignore").write_text(WHITELIST)
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "x.md").write_text("doc\n")
    return ws


def stat_key(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def test_whitelist_parsing() -> None:
    assert context.top_level_whitelist(WHITELIST) == {
        "pkg",
        "pyproject.toml",
        "Dockerfile",
        ".dockerignore",
    }
    assert context.top_level_whitelist("# c\n.git\n") is None
    assert context.top_level_whitelist("*\n!*.py\n") is None
    # a glob below a plain top-level name syncs that whole folder; BuildKit applies the rest
    assert context.top_level_whitelist("*\n!src/*.py\n") == {"src", "Dockerfile", ".dockerignore"}


def test_first_sync_copies_only_the_whitelist(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    dest = tmp_path / "ctx"
    result = context.sync(ws, dest)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == [".dockerignore", "Dockerfile", "pkg/a.py", "pkg/sub/b.py", "pyproject.toml"]
    assert result.written == 5 and result.removed == 0


def test_same_size_edit_with_restored_mtime_gets_new_bytes_and_a_new_stat(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    dest = tmp_path / "ctx"
    context.sync(ws, dest)
    src = ws / "pkg" / "a.py"
    before_src = src.stat()
    before_ctx = stat_key(dest / "pkg" / "a.py")
    untouched = stat_key(dest / "pkg" / "sub" / "b.py")
    src.write_text("A = 9\n")  # same size
    os.utime(src, ns=(before_src.st_atime_ns, before_src.st_mtime_ns))  # mtime put back
    assert stat_key(src) == (before_src.st_size, before_src.st_mtime_ns)  # fools size+mtime

    result = context.sync(ws, dest)

    assert (dest / "pkg" / "a.py").read_text() == "A = 9\n"
    after = stat_key(dest / "pkg" / "a.py")
    assert after[0] == before_ctx[0] and after[1] > before_ctx[1]
    assert stat_key(dest / "pkg" / "sub" / "b.py") == untouched
    assert (result.written, result.removed) == (1, 0)
    assert os.stat(src).st_mtime_ns == before_src.st_mtime_ns  # the checkout is never touched


def test_repeated_same_size_edits_in_one_process_each_land(tmp_path: Path) -> None:
    """filecmp would cache verdicts by (size, mtime) and miss the second edit; this must not."""
    ws = make_workspace(tmp_path)
    dest = tmp_path / "ctx"
    src = ws / "pkg" / "a.py"
    mtime = src.stat().st_mtime_ns
    for value in "12345":
        src.write_text(f"A = {value}\n")
        os.utime(src, ns=(mtime, mtime))
        context.sync(ws, dest)
        assert (dest / "pkg" / "a.py").read_text() == f"A = {value}\n"


def test_unchanged_sync_touches_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    dest = tmp_path / "ctx"
    context.sync(ws, dest)
    stats = {p: stat_key(p) for p in dest.rglob("*") if p.is_file()}
    result = context.sync(ws, dest)
    assert result.written == 0 and result.removed == 0 and result.unchanged == 5
    assert {p: stat_key(p) for p in dest.rglob("*") if p.is_file()} == stats


def test_deletes_renames_modes_and_symlinks(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    dest = tmp_path / "ctx"
    context.sync(ws, dest)
    (ws / "pkg" / "sub" / "b.py").rename(ws / "pkg" / "c.py")
    (ws / "pkg" / "sub").rmdir()
    (ws / "pkg" / "a.py").chmod(0o755)
    (ws / "pkg" / "link").symlink_to("a.py")
    result = context.sync(ws, dest)
    assert not (dest / "pkg" / "sub").exists()
    assert (dest / "pkg" / "c.py").read_text() == "B = 2\n"
    assert os.stat(dest / "pkg" / "a.py").st_mode & 0o111
    assert os.readlink(dest / "pkg" / "link") == "a.py"
    assert result.removed == 2  # sub/b.py and sub/
    (ws / "pkg" / "link").unlink()
    (ws / "pkg" / "link").symlink_to("c.py")
    context.sync(ws, dest)
    assert os.readlink(dest / "pkg" / "link") == "c.py"


def test_default_context_dir_is_per_checkout(tmp_path: Path) -> None:
    a = context.default_context_dir(tmp_path / "a", tmp_path / "cache")
    b = context.default_context_dir(tmp_path / "b", tmp_path / "cache")
    assert a != b and a.parent == b.parent == tmp_path / "cache" / "sidecar-forge" / "build-context"


def test_a_second_build_of_the_same_context_waits_and_says_so(tmp_path: Path) -> None:
    import threading

    from buildtool.images.ui import ListReporter

    ctx = tmp_path / "ctx"
    order: list[str] = []
    first_in = threading.Event()
    release = threading.Event()

    def first() -> None:
        with context.locked(ctx, ListReporter()):
            order.append("first in")
            first_in.set()
            release.wait(10)
            order.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    second = ListReporter()
    timer = threading.Timer(0.3, release.set)
    timer.start()
    with context.locked(ctx, second):
        order.append("second in")
    thread.join(10)
    assert order == ["first in", "first out", "second in"]
    assert any("waiting for another build" in line for line in second.lines)
    assert not (tmp_path / "ctx").exists() or not any((tmp_path / "ctx").iterdir())
