"""A build context the tool owns, synced from the workspace by content.

BuildKit's context transfer decides which files to send by comparing size and mtime with the copy
it kept from the previous build. A same-size edit whose mtime is set back to the old value (an
editor, `git checkout`, a tool restoring mtimes) is then never sent, and the image ships the old
bytes. So builds do not hand BuildKit the checkout: they hand it this copy, where every file whose
bytes, kind or executable bit differ is rewritten with a fresh, strictly newer mtime, and every
unchanged file keeps the stat BuildKit saw last time (so nothing is re-sent needlessly).
The checkout itself is only read, never touched (docs/build-cache.md, rule 9).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from buildtool import fsutil
from buildtool.flock import lock_exclusive
from buildtool.images.ui import Reporter

# Never worth sending: VCS metadata and byte-compiled Python (their headers hold copy times).
ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__"})


@dataclass(frozen=True)
class SyncResult:
    written: int
    removed: int
    unchanged: int


def top_level_whitelist(dockerignore: str) -> frozenset[str] | None:
    """Top-level names a whitelist-style .dockerignore (`*` then `!name`) lets through.

    None when the file is not of that shape: then everything but `ALWAYS_SKIPPED` is synced and
    BuildKit applies the .dockerignore itself, as it always does on top of this copy.
    """
    patterns = [p.strip() for p in dockerignore.splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    if not patterns or patterns[0] not in ("*", "/*"):
        return None
    names = {".dockerignore", "Dockerfile"}
    for pattern in patterns[1:]:
        if pattern.startswith("!"):
            name = pattern[1:].strip("/").split("/", 1)[0]
            if name and not any(ch in name for ch in "*?["):
                names.add(name)
            elif name:
                return None  # a glob re-include: do not guess, sync everything
    return frozenset(names)


def checkout_key(workspace: Path) -> str:
    """A short stable name for a checkout (its resolved path)."""
    return hashlib.sha256(os.fsencode(workspace.resolve())).hexdigest()[:16]


def default_context_dir(workspace: Path, cache_home: Path) -> Path:
    """One tool-owned copy per checkout, under the user's cache folder."""
    return cache_home / "sidecar-forge" / "build-context" / checkout_key(workspace)


def default_local_cache(workspace: Path, cache_home: Path) -> Path:
    """Local mode's cache folders (no daemon reachable), one set per checkout."""
    return cache_home / "sidecar-forge" / "local-builds" / checkout_key(workspace)


def sync(workspace: Path, dest: Path) -> SyncResult:
    """Make `dest` hold the same bytes as `workspace` (within the whitelist).

    Not shared with the cache's local-mode `buildtool.cache.local.sync` (only the writes are,
    `buildtool.fsutil`): that one applies a plan from the blake3 scans behind its stamp, keeps
    build outputs (non-inputs) in its copy and sets input mtimes to the stamp time T. Here there
    is no stamp and no scan to trust: bytes and full mode are compared against the copy itself,
    the copy is an exact mirror (empty folders included, strays removed), and every rewritten
    file gets a fresh mtime, strictly newer than before, for BuildKit's size+mtime check.
    """
    dockerignore = workspace / ".dockerignore"
    allowed = top_level_whitelist(dockerignore.read_text()) if dockerignore.is_file() else None
    dest.mkdir(parents=True, exist_ok=True)
    counts = {"written": 0, "removed": 0, "unchanged": 0}
    seen: set[Path] = set()
    for entry in sorted(os.listdir(workspace)):
        if entry in ALWAYS_SKIPPED or (allowed is not None and entry not in allowed):
            continue
        _sync_tree(workspace / entry, dest / entry, seen, counts)
    _remove_unseen(dest, seen, counts)
    return SyncResult(counts["written"], counts["removed"], counts["unchanged"])


def _sync_tree(src: Path, dst: Path, seen: set[Path], counts: dict[str, int]) -> None:
    st = src.lstat()
    seen.add(dst)
    if stat.S_ISDIR(st.st_mode):
        fsutil.ensure_dir(dst)
        for name in sorted(os.listdir(src)):
            if name in ALWAYS_SKIPPED or name.endswith(".pyc"):
                continue
            _sync_tree(src / name, dst / name, seen, counts)
    elif stat.S_ISLNK(st.st_mode):
        target = os.readlink(src)
        if dst.is_symlink() and os.readlink(dst) == target:
            counts["unchanged"] += 1
            return
        fsutil.replace_symlink(dst, target, clear_dir=True)
        counts["written"] += 1
    elif stat.S_ISREG(st.st_mode):
        if fsutil.same_file(src, st, dst):
            counts["unchanged"] += 1
            return
        old_mtime_ns = dst.lstat().st_mtime_ns if dst.exists() and not dst.is_symlink() else 0
        # Strictly newer than what BuildKit saw, so its size+mtime check sends the new bytes.
        fresh = max(time.time_ns(), old_mtime_ns + 1_000_000_000)
        fsutil.replace_file(
            dst,
            _copy_from(src),
            mode=stat.S_IMODE(st.st_mode),
            times_ns=(fresh, fresh),
            clear_dir=True,
        )
        counts["written"] += 1
    # fifos, sockets and devices are not build inputs; they are left out


def _copy_from(src: Path) -> fsutil.Writer:
    def write(out: int) -> None:
        with src.open("rb") as handle:
            while block := handle.read(1 << 20):
                fsutil.write_all(out, block)

    return write


def _remove_unseen(dest: Path, seen: set[Path], counts: dict[str, int]) -> None:
    for root, dirs, files in os.walk(dest, topdown=False):
        for name in files + dirs:
            path = Path(root) / name
            if path not in seen:
                fsutil.remove_path(path)
                counts["removed"] += 1


@contextmanager
def locked(context_dir: Path, report: Reporter) -> Iterator[None]:
    """One build per context copy at a time (a second one waits, and says so): a sync while
    BuildKit reads the copy would mix two states. The lock file sits beside the copy."""
    context_dir.parent.mkdir(parents=True, exist_ok=True)
    lock_path = context_dir.with_name(context_dir.name + ".lock")
    with lock_path.open("a") as handle:
        lock_exclusive(
            handle.fileno(),
            lambda: report.line(f"waiting for another build using {context_dir} ..."),
        )
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
