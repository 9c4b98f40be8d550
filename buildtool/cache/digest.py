"""blake3 access and the workspace digest (docs/build-cache.md, rule 2).

The digest covers the sorted path list, each file's content hash and executable bit, and each
symlink's target text, each field length-prefixed so no two input sets share an encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from buildtool.cache.errors import CacheError

_blake3: Any
try:
    import blake3 as _blake3
except ImportError:  # pragma: no cover - exercised only where blake3 is missing
    _blake3 = None

DIGEST_DOMAIN = b"buildtool-inputs v1\0"

KIND_FILE = 0
KIND_EXEC = 1
KIND_SYMLINK = 2
_TAGS = (b"f", b"x", b"l")


def hasher_factory() -> Callable[..., Any]:
    """The blake3 constructor, or a clear error when the package is not installed."""
    if _blake3 is None:
        raise CacheError(
            "the Python package 'blake3' is not installed; install it "
            "(pip install -c constraints.txt blake3) to use buildtool cache-build"
        )
    return _blake3.blake3  # type: ignore[no-any-return,unused-ignore]


def auto_threads() -> int:
    """blake3's "use as many threads as useful" marker for large files."""
    hasher_factory()
    return int(_blake3.blake3.AUTO)


@dataclass(frozen=True, slots=True)
class Entry:
    """One input: relative bytes path, kind, content (file hash or symlink target), stat data."""

    path: bytes
    kind: int
    content: bytes
    size: int
    mtime_ns: int
    atime_ns: int


def inputs_digest(entries: Sequence[Entry]) -> str:
    """Hex blake3 digest of sorted entries (the caller sorts by path bytes)."""
    factory = hasher_factory()
    body = b"".join(
        b"".join(
            (
                _TAGS[e.kind],
                len(e.path).to_bytes(4, "little"),
                e.path,
                len(e.content).to_bytes(4, "little"),
                e.content,
            )
        )
        for e in entries
    )
    return str(factory(DIGEST_DOMAIN + body).hexdigest())


def path_list_bytes(paths: Sequence[bytes]) -> bytes:
    """The path list as stored: NUL-separated (NUL cannot occur in a file name)."""
    return b"\0".join(paths)


def path_list_hash(paths: Sequence[bytes]) -> str:
    factory = hasher_factory()
    return str(factory(b"buildtool-paths v1\0" + path_list_bytes(paths)).hexdigest())


def short_hash(data: bytes) -> str:
    """Checksum used to detect torn stamp files."""
    factory = hasher_factory()
    return str(factory(data).hexdigest()[:32])
