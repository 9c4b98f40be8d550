"""Walk a workspace and hash its inputs, in parallel across cores (docs/build-cache.md, rules 1-2).

The walk lists directories in this process. Hashing many small files is bound by per-file
interpreter work, which threads cannot spread (the GIL), so large workspaces are split across
forked worker processes that report fixed-size records through pipes. Files of 4 MiB and more
are hashed here, by blake3's own threads over an mmap.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import struct
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from buildtool.cache.digest import (
    KIND_EXEC,
    KIND_FILE,
    KIND_SYMLINK,
    Entry,
    auto_threads,
    hasher_factory,
)
from buildtool.cache.entries import kind
from buildtool.cache.errors import CacheError
from buildtool.cache.inputs import InputRules
from buildtool.fsutil import show

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a file swapped for a fifo between listing and opening must not hang the scan
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
BIG_FILE = 4 << 20  # from here on, blake3 hashes with its own threads over an mmap
FORK_MIN_FILES = 2000  # below this, forking costs more than it saves

# per-file record from a hashing worker: status, digest, mode, size, mtime_ns, atime_ns
_REC = struct.Struct("<B32sIqqq")
_OK, _BIG, _NOT_REGULAR, _ERROR = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path that is not hashed because it is a fifo, socket or device."""

    path: bytes
    what: str


@dataclass(frozen=True)
class ScanResult:
    entries: tuple[Entry, ...]  # sorted by path bytes
    skipped: tuple[Skipped, ...]
    bytes_hashed: int
    # mtime of every folder walked, taken before listing it: a later create, delete or rename
    # inside it moves this mtime
    dir_mtimes: Mapping[bytes, int] = field(default_factory=dict)


ProgressHook = Callable[[int, int], None]  # (files done, bytes done) increments
_Dir = tuple[bytes, list[bytes]]  # (directory rel path, file names in it)


def _join(rel: bytes, name: bytes) -> bytes:
    return rel + b"/" + name if rel else name


class _Walk:
    def __init__(self, root: bytes, rules: InputRules) -> None:
        self.root = root
        self.rules = rules
        self.symlinks: list[Entry] = []
        self.skipped: list[Skipped] = []
        self.dirs: list[_Dir] = []
        self.rels: list[bytes] = []  # relative paths of the files of `dirs`, in the same order
        self.nfiles = 0
        self.dir_mtimes: dict[bytes, int] = {}

    def where(self, rel: bytes) -> str:
        return show(os.path.join(self.root, rel) if rel else self.root)

    def run(self, start: Sequence[bytes] = (b"",), known: Collection[bytes] = ()) -> None:
        """Walk from `start`; folders in `known` are listed only when they are in `start`."""
        todo = list(start)
        while todo:
            rel = todo.pop()
            try:
                dfd = os.open(os.path.join(self.root, rel) if rel else self.root, _DIR_FLAGS)
            except OSError as exc:
                raise CacheError(
                    f"cannot read directory {self.where(rel)}: {exc.strerror}"
                ) from exc
            try:
                self.dir_mtimes[rel] = os.fstat(dfd).st_mtime_ns
                subdirs: list[bytes] = []
                self._list(dfd, rel, subdirs)
                todo.extend(d for d in subdirs if d not in known)
            finally:
                os.close(dfd)

    def _list(self, dfd: int, rel: bytes, todo: list[bytes]) -> None:
        excluded = self.rules.excluded
        names: list[bytes] = []
        rels: list[bytes] = []
        try:
            with os.scandir(dfd) as listing:
                found = list(listing)
        except OSError as exc:
            raise CacheError(f"cannot list directory {self.where(rel)}: {exc.strerror}") from exc
        for item in found:
            name = os.fsencode(item.name)
            child = _join(rel, name)
            if item.is_dir(follow_symlinks=False):
                if not excluded(child, name, True):
                    todo.append(child)
            elif excluded(child, name, False):
                continue
            elif item.is_symlink():
                try:
                    target = os.readlink(name, dir_fd=dfd)
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError as exc:
                    raise CacheError(
                        f"cannot read symlink {self.where(child)}: {exc.strerror}"
                    ) from exc
                self.symlinks.append(
                    Entry(child, KIND_SYMLINK, target, len(target), st.st_mtime_ns, st.st_atime_ns)
                )
            elif item.is_file(follow_symlinks=False):
                names.append(name)
                rels.append(child)
            else:
                mode = item.stat(follow_symlinks=False).st_mode
                self.skipped.append(Skipped(child, kind(mode)))
        if names:
            self.dirs.append((rel, names))
            self.rels.extend(rels)
            self.nfiles += len(names)


def _hash_small(
    root: bytes,
    share: Sequence[_Dir],
    factory: Callable[..., Any],
    tick: ProgressHook | None = None,
) -> bytes:
    """Records for every file of `share`, in order; stops after the first _ERROR record."""
    records: list[bytes] = []
    pack = _REC.pack
    zero = bytes(32)
    nbytes = 0
    for rel, names in share:
        try:
            dfd = os.open(os.path.join(root, rel) if rel else root, _DIR_FLAGS)
        except OSError as exc:
            records.append(pack(_ERROR, zero, 0, exc.errno or 0, 0, 0))
            return b"".join(records)
        try:
            for name in names:
                try:
                    fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
                except OSError as exc:
                    records.append(pack(_ERROR, zero, 0, exc.errno or 0, 0, 0))
                    return b"".join(records)
                try:
                    st = os.fstat(fd)
                    size = st.st_size
                    if not stat.S_ISREG(st.st_mode):
                        status, digest = _NOT_REGULAR, zero
                    elif size >= BIG_FILE:
                        status, digest = _BIG, zero
                    else:
                        # read size+1 bytes: a short read is end of file, a full one means growth
                        data = os.read(fd, size + 1)
                        hasher = factory(data)
                        while len(data) > size:
                            data = os.read(fd, 1 << 20)
                            if not data:
                                break
                            hasher.update(data)
                            size += len(data)
                        status, digest = _OK, hasher.digest()
                except OSError as exc:
                    records.append(pack(_ERROR, zero, 0, exc.errno or 0, 0, 0))
                    return b"".join(records)
                finally:
                    os.close(fd)
                records.append(
                    pack(status, digest, st.st_mode, size, st.st_mtime_ns, st.st_atime_ns)
                )
                nbytes += size
        finally:
            os.close(dfd)
        if tick is not None:
            tick(len(names), nbytes)
            nbytes = 0
    return b"".join(records)


def _hash_big(root: bytes, rel: bytes, factory: Callable[..., Any], threads: int) -> Entry:
    path = os.path.join(root, rel)
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        raise _error(path, exc.errno or 0) from exc
    try:
        st = os.fstat(fd)
        hasher = factory(max_threads=threads)
        if st.st_size:
            with mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ) as mapped:
                hasher.update(mapped)
    except OSError as exc:
        raise _error(path, exc.errno or 0) from exc
    finally:
        os.close(fd)
    kind = KIND_EXEC if st.st_mode & 0o111 else KIND_FILE
    return Entry(rel, kind, hasher.digest(), st.st_size, st.st_mtime_ns, st.st_atime_ns)


def _error(path: bytes, code: int) -> CacheError:
    if code in (errno.ENOENT, errno.ELOOP):
        return CacheError(f"input changed while hashing (removed or replaced): {show(path)}")
    return CacheError(f"cannot read input file {show(path)}: {os.strerror(code)}")


def _split(dirs: list[_Dir], parts: int, nfiles: int) -> list[list[_Dir]]:
    """Contiguous shares of about nfiles/parts files; big directories are cut in pieces."""
    target = -(-nfiles // parts)
    shares: list[list[_Dir]] = [[]]
    room = target
    for rel, names in dirs:
        start = 0
        while start < len(names):
            if room == 0 and len(shares) < parts:
                shares.append([])
                room = target
            take = len(names) - start if len(shares) == parts else min(room, len(names) - start)
            shares[-1].append((rel, names[start : start + take]))
            start += take
            room -= min(room, take)
    return shares


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _run_shares(
    root: bytes,
    shares: list[list[_Dir]],
    factory: Callable[..., Any],
    tick: ProgressHook | None,
) -> list[bytes]:
    """Hash shares[1:] in forked children and shares[0] here; records in share order."""
    children: list[tuple[int, int]] = []
    failed = False
    try:
        for share in shares[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: hash, report, leave without running any parent cleanup
                code = 0
                try:
                    os.close(read_end)
                    view = memoryview(_hash_small(root, share, factory))
                    while view:
                        view = view[os.write(write_end, view) :]
                except BaseException:
                    code = 1
                os._exit(code)
            os.close(write_end)
            children.append((pid, read_end))
        results = [_hash_small(root, shares[0], factory, tick)]
        for _pid, read_end in children:
            results.append(_read_all(read_end))
    finally:
        # reap every child; closing the read ends first unblocks any still writing
        for pid, read_end in children:
            os.close(read_end)
            failed = os.waitpid(pid, 0)[1] != 0 or failed
    if failed:
        raise CacheError("a hashing worker process failed")
    return results


def scan(
    root: bytes, rules: InputRules, jobs: int = 1, progress: ProgressHook | None = None
) -> ScanResult:
    """Hash every input under `root` (an absolute bytes path) with up to `jobs` processes."""
    factory = hasher_factory()
    walk = _Walk(root, rules)
    walk.run()
    parts = max(1, min(jobs, walk.nfiles // (FORK_MIN_FILES // 2) or 1))
    if parts > 1 and walk.nfiles >= FORK_MIN_FILES:
        shares = _split(walk.dirs, parts, walk.nfiles)
        outputs = _run_shares(root, shares, factory, progress)
    else:
        shares = [walk.dirs]
        outputs = [_hash_small(root, walk.dirs, factory, progress)]
    entries: list[Entry] = list(walk.symlinks)
    skipped = list(walk.skipped)
    big: list[bytes] = []
    nbytes = 0
    threads = auto_threads()
    # shares are contiguous slices of walk.rels, and a share with an error ends with its
    # _ERROR record, so the concatenated records line up with walk.rels up to the first error
    mine = sum(len(names) for _rel, names in shares[0])
    done = 0
    mine_bytes = 0
    for child, record in zip(walk.rels, _REC.iter_unpack(b"".join(outputs)), strict=False):
        status, digest, mode, size, mtime_ns, atime_ns = record
        if status == _OK:
            entries.append(
                Entry(
                    child,
                    KIND_EXEC if mode & 0o111 else KIND_FILE,
                    digest,
                    size,
                    mtime_ns,
                    atime_ns,
                )
            )
            nbytes += size
        elif status == _BIG:
            big.append(child)
        elif status == _NOT_REGULAR:
            skipped.append(Skipped(child, kind(mode)))
        else:
            raise _error(os.path.join(root, child), size)
        done += 1
        if done == mine:
            mine_bytes = nbytes
    if done < walk.nfiles:
        raise CacheError(f"hashing stopped before {show(os.path.join(root, walk.rels[done]))}")
    if progress is not None and done > mine:  # this process's share reported as it went
        progress(done - mine, nbytes - mine_bytes)
    for rel in big:
        entry = _hash_big(root, rel, factory, threads)
        entries.append(entry)
        nbytes += entry.size
        if progress is not None:
            progress(0, entry.size)
    entries.sort(key=lambda e: e.path)
    skipped.sort(key=lambda s: s.path)
    return ScanResult(tuple(entries), tuple(skipped), nbytes, walk.dir_mtimes)


def added_inputs(root: bytes, rules: InputRules, before: ScanResult) -> list[Entry] | None:
    """Inputs created since `before` (e.g. a Cargo.lock the build wrote), found by looking only
    into folders whose mtime moved. None when an input disappeared, changed type or cannot be
    told apart: then nothing may be amended."""
    changed = []
    for rel, mtime in before.dir_mtimes.items():
        try:
            st = os.stat(os.path.join(root, rel) if rel else root, follow_symlinks=False)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        if st.st_mtime_ns != mtime:
            changed.append(rel)
    if not changed:
        return []
    walk = _Walk(root, rules)
    walk.run(changed, known=before.dir_mtimes.keys())
    known = {e.path for e in before.entries}
    known.update(s.path for s in before.skipped)
    now = set(walk.rels)
    now.update(e.path for e in walk.symlinks)
    now.update(s.path for s in walk.skipped)
    listed = set(changed)
    for path in known:
        if path.rpartition(b"/")[0] in listed and path not in now:
            return None  # removed or renamed during the build
    if any(s.path not in known for s in walk.skipped):
        return None
    added = [e for e in walk.symlinks if e.path not in known]
    fresh = [(rel, [n for n in names if _join(rel, n) not in known]) for rel, names in walk.dirs]
    fresh = [(rel, names) for rel, names in fresh if names]
    records = _REC.iter_unpack(_hash_small(root, fresh, hasher_factory()))
    for rel, names in fresh:
        for name in names:
            status, digest, mode, size, mtime_ns, atime_ns = next(records, (_ERROR,) * 6)
            if status != _OK:
                return None
            kind = KIND_EXEC if mode & 0o111 else KIND_FILE
            added.append(Entry(_join(rel, name), kind, digest, size, mtime_ns, atime_ns))
    return added


def default_jobs() -> int:
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1
