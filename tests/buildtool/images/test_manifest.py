"""The file manifest (`buildtool images manifest`): what it records and what it leaves out."""

from __future__ import annotations

import hashlib
import io
import tarfile

from buildtool.images import manifest


def tar_of(*members: tuple[str, str, bytes | str, int, int]) -> io.BytesIO:
    """(name, kind, content or link target, mode, uid) -> a tar stream like `docker export`'s."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, kind, content, mode, uid in members:
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.mtime = mode, uid, uid, 1_700_000_000
            if kind == "f":
                data = content if isinstance(content, bytes) else content.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"d": tarfile.DIRTYPE, "l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE}[kind]
            info.linkname = str(content)
            tar.addfile(info)
    buffer.seek(0)
    return buffer


BASE = (
    ("./", "d", "", 0o755, 0),
    ("etc/", "d", "", 0o755, 0),
    ("etc/passwd", "f", "root:x:0:0\n", 0o644, 0),
    ("etc/hosts", "f", "127.0.0.1 a1b2c3\n", 0o644, 0),
    ("etc/hostname", "f", "a1b2c3\n", 0o644, 0),
    ("etc/resolv.conf", "f", "nameserver 10.0.0.1\n", 0o644, 0),
    ("etc/mtab", "l", "/proc/mounts", 0o777, 0),
    ("srv/app.py", "f", "print('x')\n", 0o644, 10001),
    ("srv/app-link", "l", "app.py", 0o777, 0),
    ("srv/app-hard", "h", "srv/app.py", 0o644, 10001),
)


def manifest_of(*members: tuple[str, str, bytes | str, int, int]) -> list[manifest.ManifestEntry]:
    return manifest.from_tar(tar_of(*members))


def test_entries_sorted_with_kind_mode_owner_and_hash() -> None:
    entries = manifest_of(*BASE)
    paths = [e.path for e in entries]
    assert paths == sorted(paths)
    assert "/etc/hosts" not in paths and "/etc/hostname" not in paths
    assert "/etc/resolv.conf" not in paths and "/etc/mtab" not in paths
    by_path = {e.path: e for e in entries}
    app = by_path["/srv/app.py"]
    assert (app.kind, app.mode, app.uid, app.gid) == ("f", 0o644, 10001, 10001)
    assert app.digest == hashlib.sha256(b"print('x')\n").hexdigest()
    assert by_path["/srv/app-hard"].digest == app.digest  # a hard link hashes like its file
    assert by_path["/srv/app-link"].kind == "l" and by_path["/srv/app-link"].digest != app.digest
    assert by_path["/etc"].digest == "-"
    line = app.line()
    assert line == f"f\t0644\t10001:10001\t{app.digest}\t/srv/app.py"


def test_runtime_injected_files_are_the_only_exclusions() -> None:
    base = manifest_of(*BASE)
    # what the daemon writes into each container differs; nothing else does: equal manifests
    other = [
        (n, k, c + "other" if n in ("etc/hosts", "etc/hostname", "etc/resolv.conf") else c, m, u)
        for n, k, c, m, u in BASE
    ]
    assert manifest.differences(base, manifest_of(*other)) == []  # type: ignore[arg-type]


def test_every_kind_of_difference_is_found() -> None:
    base = manifest_of(*BASE)
    changes = {
        "content": ("srv/app.py", "f", "print('y')\n", 0o644, 10001),
        "mode": ("srv/app.py", "f", "print('x')\n", 0o755, 10001),
        "owner": ("srv/app.py", "f", "print('x')\n", 0o644, 0),
        "link target": ("srv/app-link", "l", "other.py", 0o777, 0),
    }
    for what, changed in changes.items():
        members = [changed if m[0] == changed[0] else m for m in BASE]
        diff = manifest.differences(base, manifest_of(*members))
        assert any(f"\t/{changed[0]}\n" in d for d in diff), (what, diff)
    extra = manifest.differences(base, manifest_of(*BASE, ("srv/new", "f", "", 0o644, 0)))
    assert extra == [f"- (absent) /srv/new\n+ f\t0644\t0:0\t{EMPTY}\t/srv/new"]


EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_odd_names_stay_on_one_line() -> None:
    entries = manifest_of(("srv/a\nb\tc", "f", "x", 0o644, 0))
    (entry,) = entries
    assert "\n" not in entry.line() and entry.line().endswith("/srv/a\\nb\\tc")
