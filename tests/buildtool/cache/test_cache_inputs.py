"""Which files are inputs, how the digest reacts, what alignment touches (rules 1, 2, 9)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cache_support import config, in_process, run_helper, write

from buildtool.cache.digest import inputs_digest
from buildtool.cache.inputs import InputRules
from buildtool.cache.scan import BIG_FILE, scan

WEIRD_NAMES = [
    b"new\nline.txt",
    b"carriage\rreturn.txt",
    b"back\\slash.txt",
    b"-leading-dash.txt",
    b"glob[ab]*?.txt",
    b"invalid-\xff\xfe-utf8.txt",
    b" spaced name ",
]


def digest_of(root: Path, *excludes: str) -> str:
    return inputs_digest(scan(os.fsencode(root), InputRules.build([], excludes)).entries)


def paths_of(root: Path, *excludes: str, cache: bytes | None = None) -> list[bytes]:
    rules = InputRules.build([cache] if cache else [], excludes)
    return [e.path for e in scan(os.fsencode(root), rules).entries]


def test_weird_names_are_inputs_and_each_change_counts(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    for index, name in enumerate(WEIRD_NAMES):
        os.makedirs(os.path.join(root, b"d"), exist_ok=True)
        with open(os.path.join(root, b"d", name), "wb") as handle:
            handle.write(b"content %d" % index)
    assert sorted(paths_of(tmp_path)) == sorted(b"d/" + n for n in WEIRD_NAMES)
    before = digest_of(tmp_path)
    for name in WEIRD_NAMES:
        path = os.path.join(root, b"d", name)
        with open(path, "rb") as handle:
            original = handle.read()
        with open(path, "wb") as handle:
            handle.write(original.upper())  # same size
        assert digest_of(tmp_path) != before, name
        with open(path, "wb") as handle:
            handle.write(original)
        assert digest_of(tmp_path) == before


def test_weird_names_through_the_cli_get_aligned(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    root = os.fsencode(ws)
    os.makedirs(root)
    for name in WEIRD_NAMES:
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(b"x")
        os.utime(os.path.join(root, name), (1_000_000, 1_000_000))
    done = run_helper(ws, tmp_path / "cache", ["true"])
    assert f"{len(WEIRD_NAMES)} inputs hashed, {len(WEIRD_NAMES)} aligned" in done.stderr
    stamp_times = {os.lstat(os.path.join(root, n)).st_mtime_ns for n in WEIRD_NAMES}
    assert len(stamp_times) == 1 and stamp_times != {1_000_000 * 10**9}


def test_rename_delete_and_chmod_each_change_the_digest(tmp_path: Path) -> None:
    write(tmp_path / "a.sh", "echo a\n")
    write(tmp_path / "b.txt", "b\n")
    base = digest_of(tmp_path)
    os.rename(tmp_path / "b.txt", tmp_path / "c.txt")
    renamed = digest_of(tmp_path)
    assert renamed != base
    os.rename(tmp_path / "c.txt", tmp_path / "b.txt")
    assert digest_of(tmp_path) == base
    os.chmod(tmp_path / "a.sh", 0o755)
    assert digest_of(tmp_path) != base
    os.chmod(tmp_path / "a.sh", 0o644)
    os.chmod(tmp_path / "a.sh", 0o600)  # not the executable bit: not an input
    assert digest_of(tmp_path) == base
    os.unlink(tmp_path / "b.txt")
    assert digest_of(tmp_path) not in (base, renamed)


def test_empty_file_vs_missing_vs_moved_between_folders(tmp_path: Path) -> None:
    write(tmp_path / "x" / "f", "")
    one = digest_of(tmp_path)
    os.rename(tmp_path / "x", tmp_path / "y")
    assert digest_of(tmp_path) != one


def test_excluded_by_default_and_by_glob(tmp_path: Path) -> None:
    write(tmp_path / "src" / "m.py", "x = 1\n")
    write(tmp_path / "src" / "__pycache__" / "m.cpython-311.pyc", b"\0" * 16)
    write(tmp_path / "old.pyc", b"\0" * 16)
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / "sub" / ".git", "gitdir: ../.git/modules/sub\n")  # a submodule's .git file
    write(tmp_path / ".hg" / "x", "")
    write(tmp_path / ".svn" / "x", "")
    write(tmp_path / "target" / "debug" / "app", "binary")
    write(tmp_path / "notes.log", "log")
    write(tmp_path / "deep" / "notes.log", "log")
    write(tmp_path / "docs" / "build" / "x.html", "")
    write(tmp_path / "build" / "keep.txt", "a file named build/ is a folder here")
    got = paths_of(tmp_path, "*.log", "docs/build", cache=b"target")
    assert got == [b"build/keep.txt", b"src/m.py"]
    # "build/": any folder named build, at any depth; files named build stay inputs
    assert paths_of(tmp_path, "build/", cache=b"target") == [
        b"deep/notes.log",
        b"notes.log",
        b"src/m.py",
    ]


def test_folder_only_glob_skips_folders_not_files(tmp_path: Path) -> None:
    write(tmp_path / "out" / "a", "")
    write(tmp_path / "x" / "out", "file named out")
    assert paths_of(tmp_path, "out/") == [b"x/out"]


def test_symlink_outside_is_hashed_by_target_not_followed_not_touched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "outside bytes", mtime=1_234_567)
    ws = tmp_path / "ws"
    write(ws / "a.txt", "a", mtime=1_000_000)
    os.symlink(outside / "secret.txt", ws / "link")
    os.symlink(outside, ws / "dirlink")
    got = scan(os.fsencode(ws), InputRules.build([], ())).entries
    assert [e.path for e in got] == [b"a.txt", b"dirlink", b"link"]
    assert got[2].content == os.fsencode(outside / "secret.txt")
    before = digest_of(ws)
    write(outside / "secret.txt", "changed outside", mtime=1_234_567)
    assert digest_of(ws) == before  # target content is not an input
    os.unlink(ws / "link")
    os.symlink(outside / "other.txt", ws / "link")
    assert digest_of(ws) != before  # target text is
    outcome = in_process(config(ws, tmp_path / "cache"), lambda _: None)
    assert outcome.aligned == 3
    t_ns = outcome.decision.stamp_time * 10**9
    assert os.lstat(ws / "link").st_mtime_ns == t_ns
    assert os.stat(outside / "secret.txt").st_mtime == 1_234_567
    assert os.stat(outside).st_mtime_ns != t_ns


def test_fifo_is_skipped_with_a_warning(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "a.txt", "a")
    os.mkfifo(ws / "pipe")
    result = scan(os.fsencode(ws), InputRules.build([], ()))
    assert [(s.path, s.what) for s in result.skipped] == [(b"pipe", "a FIFO")]
    done = run_helper(ws, tmp_path / "cache", ["true"])
    assert "warning: skipped a FIFO pipe" in done.stderr
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


def test_vcs_metadata_is_never_touched(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".git" / "index", "idx", mtime=1_000)
    write(ws / "a", "a", mtime=1_000)
    in_process(config(ws, tmp_path / "cache"), lambda _: None)
    assert os.stat(ws / ".git" / "index").st_mtime == 1_000
    assert os.stat(ws / "a").st_mtime != 1_000


def test_big_files_and_many_files_hash_like_the_sequential_path(tmp_path: Path) -> None:
    # forked workers and blake3's threads must give the same digest as one process
    big = os.urandom(1024) * (BIG_FILE // 1024 + 3)
    write(tmp_path / "big.bin", big)
    for index in range(2500):
        write(tmp_path / f"d{index % 5}" / f"f{index}", f"{index}" * (index % 7))
    os.chmod(tmp_path / "d1" / "f1", 0o755)
    rules = InputRules.build([], ())
    one = scan(os.fsencode(tmp_path), rules, jobs=1)
    three = scan(os.fsencode(tmp_path), rules, jobs=3)

    def key(result: object) -> list[tuple[object, ...]]:
        # atime moves when files are read, so it is left out
        return [(e.path, e.kind, e.content, e.size, e.mtime_ns) for e in result.entries]  # type: ignore[attr-defined]

    assert key(one) == key(three) and one.bytes_hashed == three.bytes_hashed
    assert len(one.entries) == 2501 and one.bytes_hashed == len(big) + sum(
        len(f"{i}" * (i % 7)) for i in range(2500)
    )
    import blake3

    assert (
        next(e for e in one.entries if e.path == b"big.bin").content == blake3.blake3(big).digest()
    )
