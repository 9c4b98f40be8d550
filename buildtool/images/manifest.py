"""The file manifest of an image: path, kind, mode, owner and sha256 of every entry, sorted.

    buildtool images manifest IMAGE        # one line per entry; diff two to compare releases

Two builds are the same release when their manifests are equal. Image digests cannot show it:
the 20.10 daemon's BuildKit writes each layer's file times, so identical files still give new
layer digests. The manifest reads the image's flattened file system (`docker export` of a
container that is created, never started) and leaves out only the files the daemon injects into
every container at run time.

Line format (tab-separated, path last and escaped like Python's repr inside, so a name with a
tab or newline stays on its line):
    <kind>\t<mode, octal>\t<uid>:<gid>\t<sha256 of the content, of a symlink's target text,
    or "-" for folders>\t<path>
kind: f file, l symlink, h hard link (hashed like the file it links to), d folder, c/b device
(the hash field holds major,minor), p FIFO.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

# Written by the daemon into every container, whatever the image holds.
RUNTIME_INJECTED: frozenset[str] = frozenset(
    {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/mtab"}
)


@dataclass(frozen=True, order=True)
class ManifestEntry:
    path: str
    kind: str
    mode: int
    uid: int
    gid: int
    digest: str

    def line(self) -> str:
        shown = repr(self.path)[1:-1] if not self.path.isprintable() else self.path
        return f"{self.kind}\t{self.mode:04o}\t{self.uid}:{self.gid}\t{self.digest}\t{shown}"


def _kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "f"
    if member.issym():
        return "l"
    if member.islnk():
        return "h"
    if member.isdir():
        return "d"
    if member.ischr():
        return "c"
    if member.isblk():
        return "b"
    if member.isfifo():
        return "p"
    return "?"


def _normal(name: str) -> str:
    """`./etc/hosts`, `etc/hosts` and `/etc/hosts/` -> `/etc/hosts`."""
    while name.startswith("./"):
        name = name[2:]
    name = name.strip("/")
    return "/" if name in ("", ".") else "/" + name


def from_tar(stream: IO[bytes], exclude: frozenset[str] = RUNTIME_INJECTED) -> list[ManifestEntry]:
    """The sorted manifest of a tar stream of a root file system (read once, front to back)."""
    entries: dict[str, ManifestEntry] = {}
    file_digest: dict[str, str] = {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            path = _normal(member.name)
            if path in exclude:
                continue
            kind = _kind(member)
            if kind == "f":
                handle = tar.extractfile(member)
                h = hashlib.sha256()
                if handle is not None:
                    for block in iter(lambda: handle.read(1 << 20), b""):  # noqa: B023
                        h.update(block)
                digest = h.hexdigest()
                file_digest[path] = digest
            elif kind == "l":
                digest = hashlib.sha256(
                    member.linkname.encode("utf-8", "surrogateescape")
                ).hexdigest()
            elif kind == "h":
                digest = file_digest.get(_normal(member.linkname), "?")
            elif kind in ("c", "b"):
                digest = f"{member.devmajor},{member.devminor}"
            else:
                digest = "-"
            entries[path] = ManifestEntry(
                path, kind, member.mode & 0o7777, member.uid, member.gid, digest
            )
    return sorted(entries.values())


class _ChunkReader:
    """A file-like object over an iterator of byte chunks (the SDK's export stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


def of_image(sdk: Any, image: str) -> list[ManifestEntry]:
    """The manifest of a local image, through the daemon (the container is never started)."""
    container = sdk.containers.create(image, entrypoint=["/nonexistent"], command=[])
    try:
        return from_tar(_ChunkReader(container.export(chunk_size=1 << 20)))  # type: ignore[arg-type]
    finally:
        container.remove(force=True)


def differences(a: Iterable[ManifestEntry], b: Iterable[ManifestEntry]) -> list[str]:
    """Human-readable lines for every path whose entry differs (or exists on one side only)."""
    left = {e.path: e for e in a}
    right = {e.path: e for e in b}
    out = []
    for path in sorted(left.keys() | right.keys()):
        x, y = left.get(path), right.get(path)
        if x != y:
            before = x.line() if x else f"(absent) {path}"
            after = y.line() if y else f"(absent) {path}"
            out.append(f"- {before}\n+ {after}")
    return out
