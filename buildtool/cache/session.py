"""The cache-build sequence: hash, lock, read the stamp, decide, clean, publish, align, build.

`CacheSession` holds the lock from reading the stamp until the build is over (build-cache rule 8)
and publishes the new stamp before the build starts (rule 4). A `building` marker in the state
folder lives exactly as long as a build may be writing; finding it on entry means the previous
build was killed, and the decision treats the inputs as changed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import TracebackType

from buildtool.cache.align import align, misaligned
from buildtool.cache.artifacts import clear, newest_mtime
from buildtool.cache.config import CacheConfig
from buildtool.cache.decision import Decision, decide, removed_paths
from buildtool.cache.digest import Entry, inputs_digest, path_list_hash
from buildtool.cache.entries import odd_entry
from buildtool.cache.errors import CacheError
from buildtool.cache.inputs import STATE_DIR, InputRules, relative_inside
from buildtool.cache.local import WORKTREE_NAME, sync
from buildtool.cache.lock import CacheLock
from buildtool.cache.progress import HashProgress
from buildtool.cache.scan import ScanResult, Skipped, added_inputs, scan
from buildtool.cache.stamp import (
    PATHS_NAME,
    STAMP_NAME,
    Stamp,
    StampProblem,
    read_paths,
    read_stamp,
    remove_stale_temps,
    write_paths,
    write_stamp,
)
from buildtool.fsutil import is_real_dir, remove_path, replace_file, show

MARKER_NAME = b"building"
MAX_WAIT = 2.0  # seconds; T further ahead means artifacts from a clock in the future


@dataclass(frozen=True)
class Outcome:
    """What the helper decided and did (or, for a dry run, would do)."""

    decision: Decision
    digest: str
    hashed: int
    bytes_hashed: int
    aligned: int
    skipped: tuple[Skipped, ...]
    cleaned: tuple[bytes, ...]
    build_dir: bytes  # where the command runs: the workspace, or the local copy


@dataclass(frozen=True)
class Layout:
    """Folders of one run, checked once."""

    workspace: bytes
    cache: bytes
    state: bytes
    build_dir: bytes
    rules: InputRules


@dataclass(frozen=True)
class CopyView:
    """The local copy as the last sync left it."""

    entries: tuple[Entry, ...]  # its files at input paths, old or new; the rest is output
    drifted: bool  # it no longer matches the stamp: rebuild everything
    wipe: bool  # unknown which files are stale inputs: start the copy afresh


def view_copy(
    where: Layout, old: Stamp | StampProblem, new_paths: list[bytes], jobs: int
) -> CopyView:
    """Tell stale inputs from build outputs in the copy by the stamp's path list."""
    old_paths = read_paths(where.state, old.paths_hash) if isinstance(old, Stamp) else None
    if old_paths is None or not isinstance(old, Stamp) or not os.path.isdir(where.build_dir):
        return CopyView((), drifted=isinstance(old, Stamp), wipe=True)
    found = scan(where.build_dir, where.rules, jobs)
    known = set(old_paths).union(new_paths)
    entries = tuple(e for e in found.entries if e.path in known)
    previous = set(old_paths)
    drifted = inputs_digest([e for e in entries if e.path in previous]) != old.digest
    return CopyView(entries, drifted, wipe=False)


def newest_artifact(where: Layout, config: CacheConfig, paths: list[bytes]) -> float | None:
    """Newest output mtime: the cache folder, extra artifact folders, and in local mode
    everything in the copy that is not an input."""
    roots = [where.cache, *config.artifact_dirs]
    newest = newest_mtime(roots, skip=frozenset({where.state}))
    if config.local and os.path.isdir(where.build_dir):
        inputs = {os.path.join(where.build_dir, p) for p in paths}
        in_copy = newest_mtime([where.build_dir], ignore=inputs.__contains__)
        if in_copy is not None and (newest is None or in_copy > newest):
            newest = in_copy
    return newest


def layout(config: CacheConfig, create: bool) -> Layout:
    ws, cache = config.workspace, config.cache
    if not os.path.isdir(ws):
        raise CacheError(f"workspace {show(ws)} is not a directory")
    if relative_inside(cache, ws) is not None:
        raise CacheError(
            f"workspace {show(ws)} must not be the cache folder {show(cache)} or inside it"
        )
    if os.path.lexists(cache) and not os.path.isdir(cache):
        raise CacheError(f"cache folder {show(cache)} exists and is not a directory")
    state = os.path.join(cache, STATE_DIR)
    if os.path.lexists(state) and (os.path.islink(state) or not os.path.isdir(state)):
        raise CacheError(f"bad stamp folder: {show(state)} is not a directory")
    if create:
        try:
            os.makedirs(state, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"bad stamp folder: cannot create {show(state)}: {exc.strerror}"
            ) from exc
        if not os.access(state, os.W_OK | os.X_OK):
            raise CacheError(f"bad stamp folder: {show(state)} is not writable")
    # the cache folder (and an artifact folder) inside the workspace is output, not input
    inside = [relative_inside(ws, d) for d in (cache, *config.artifact_dirs)]
    rules = InputRules.build([r for r in inside if r], config.excludes)
    build_dir = os.path.join(state, WORKTREE_NAME) if config.local else ws
    return Layout(ws, cache, state, build_dir, rules)


def _clean_targets(config: CacheConfig, where: Layout, paths: list[bytes]) -> list[bytes]:
    """Absolute `--clean-on-removal` paths, refusing any that would delete an input."""
    inputs = set(paths)
    targets = []
    for given in config.clean_on_removal:
        target = os.path.normpath(os.path.join(where.build_dir, given))
        rel = relative_inside(where.build_dir, target)
        if rel == b"" or (rel is None and relative_inside(where.cache, target) is None):
            raise CacheError(
                f"--clean-on-removal {show(given)}: must name a folder inside the workspace "
                f"(not the workspace itself) or inside the cache folder {show(where.cache)}"
            )
        if rel is not None:
            prefix = rel + b"/"
            if rel in inputs or any(p.startswith(prefix) for p in inputs):
                raise CacheError(
                    f"--clean-on-removal {show(given)}: it holds inputs; name derived outputs only"
                )
        targets.append(target)
    return targets


class CacheSession:
    """`with CacheSession(config, say) as outcome:` build in `outcome.build_dir`, then
    `finish(completed)` says whether the build ran to its end (a killed build keeps the marker).
    """

    def __init__(
        self,
        config: CacheConfig,
        say: Callable[[str], None],
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.say = say
        self.now = now
        self.sleep = sleep
        self.where = layout(config, create=True)
        self.lock = CacheLock(self.where.state, config.lock_timeout, say)
        self.marker = os.path.join(self.where.state, MARKER_NAME)
        self._completed = False
        self._found: ScanResult | None = None
        self._stamp_time: int | None = None

    def _scan(self, root: bytes) -> ScanResult:
        bar = HashProgress(self.config.progress)
        try:
            return scan(root, self.where.rules, self.config.jobs, bar)
        finally:
            bar.close()

    def __enter__(self) -> Outcome:
        where = self.where
        # the checkout is private to this helper: hash it before waiting for the lock
        found = self._scan(where.workspace)
        self.lock.acquire()
        try:
            return self._under_lock(found)
        except BaseException:
            self.lock.release()
            raise

    def _under_lock(self, found: ScanResult) -> Outcome:
        where, config = self.where, self.config
        remove_stale_temps(where.state)
        interrupted = os.path.lexists(self.marker)  # any kind of entry: a kill left it
        self._replace_odd_entries()
        old = read_stamp(where.state)
        entries = found.entries
        digest = inputs_digest(entries)
        paths = [e.path for e in entries]
        copy_entries = entries
        self._mark_building()  # from here on the cache (and the local copy) may change
        if config.local:
            view = view_copy(where, old, paths, config.jobs)
            interrupted = interrupted or view.drifted
            if view.wipe:
                clear(where.build_dir, keep=None)
            os.makedirs(where.build_dir, exist_ok=True)
            written = set(sync(where.workspace, entries, where.build_dir, view.entries))
            by_path = {e.path: e for e in view.entries}
            copy_entries = tuple(
                by_path[e.path] if e.path not in written else _fresh(e) for e in entries
            )
        newest = None
        if not isinstance(old, Stamp) or old.digest != digest or interrupted:
            newest = newest_artifact(where, config, paths)
        decision = decide(old, digest, self.now(), newest, interrupted=interrupted)
        cleaned: list[bytes] = []
        if decision.changed:
            paths_hash = path_list_hash(paths)
            if config.clean_on_removal:
                targets = _clean_targets(config, where, paths)
                if self._lost_paths(old, paths_hash, paths):
                    for target in targets:
                        clear(target, keep=where.state)
                        cleaned.append(target)
            # the path list first: a kill between the two leaves a mismatch, read as "unknown"
            write_paths(where.state, paths, paths_hash)
            write_stamp(where.state, Stamp(digest, paths_hash, decision.stamp_time, len(paths)))
        aligned = align(where.build_dir, copy_entries, decision.stamp_time)
        self._found, self._stamp_time = found, decision.stamp_time
        if config.wait_for_stamp_time:
            self._wait_until(decision.stamp_time)
        return Outcome(
            decision,
            digest,
            len(entries),
            found.bytes_hashed,
            aligned,
            found.skipped,
            tuple(cleaned),
            where.build_dir,
        )

    def _lost_paths(self, old: Stamp | StampProblem, paths_hash: str, paths: list[bytes]) -> bool:
        if isinstance(old, Stamp):
            if old.paths_hash == paths_hash:
                return False
            return removed_paths(read_paths(self.where.state, old.paths_hash), paths)
        return True

    def _wait_until(self, stamp_time: int) -> None:
        ahead = stamp_time - self.now()
        if ahead > MAX_WAIT:
            self.say(
                f"note: stamp time is {ahead:.0f} s ahead of the clock (outputs from a clock in "
                "the future); the next unchanged run may rebuild"
            )
        elif ahead > 0:
            self.sleep(ahead + 0.01)

    def _replace_odd_entries(self) -> None:
        """A shared cache may hold a symlink, FIFO or folder where the helper keeps its files:
        never follow, write through or wait on it. Under the lock, each is removed (a folder
        with its contents, links not followed), saying so in one line; fresh files follow."""
        where = self.where
        for name in (STAMP_NAME, PATHS_NAME, MARKER_NAME):
            path = os.path.join(where.state, name)
            what = odd_entry(path)
            if what is not None:
                self.say(f"replacing {show(path)}: it was {what}, not a file the helper wrote")
                self._remove(path)
        copy = where.build_dir
        if self.config.local and os.path.lexists(copy) and not is_real_dir(copy):
            what = odd_entry(copy) or "not a directory"
            self.say(f"replacing {show(copy)}: it was {what}, not the local copy")
            self._remove(copy)

    @staticmethod
    def _remove(path: bytes) -> None:
        try:
            remove_path(path)
        except OSError as exc:
            raise CacheError(f"cannot remove {show(path)}: {exc.strerror}") from exc

    def _mark_building(self) -> None:
        try:
            # a fresh file renamed into place: never written through a link put there
            # no fsync: a kill keeps it (page cache); only a power loss could drop it
            replace_file(self.marker, f"{os.getpid()}\n".encode(), clear_dir=True)
        except OSError as exc:
            raise CacheError(f"cannot write {show(self.marker)}: {exc.strerror}") from exc

    def finish(self, completed: bool, succeeded: bool = False) -> None:
        """Record how the build ended: only a build that ran to its end clears the marker.

        After a successful build, inputs the build itself created in the workspace (a
        Cargo.lock on a first build) join the stamp, keeping T, so the next run of the same
        bytes is unchanged. Inputs it modified or removed are left out: the next run sees
        them as changed, the safe side.
        """
        self._completed = completed
        if succeeded and not self.config.local and self._found is not None:
            self._amend(self._found)

    def _amend(self, found: ScanResult) -> None:
        where = self.where
        added = added_inputs(where.workspace, where.rules, found)
        if not added or self._stamp_time is None:
            return
        entries = sorted((*found.entries, *added), key=lambda e: e.path)
        paths = [e.path for e in entries]
        paths_hash = path_list_hash(paths)
        digest = inputs_digest(entries)
        write_paths(where.state, paths, paths_hash)
        write_stamp(where.state, Stamp(digest, paths_hash, self._stamp_time, len(paths)))
        names = ", ".join(show(e.path) for e in added[:3]) + (", ..." if len(added) > 3 else "")
        self.say(
            f"the build created {len(added)} input(s), now part of the stamp: {names} "
            "(build outputs belong in the cache folder or under --exclude)"
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._completed and exc_type is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.marker)
        finally:
            self.lock.release()


def _fresh(entry: Entry) -> Entry:
    return replace(entry, mtime_ns=-1)  # a just-written copy: never equal to T, so aligned


def dry_run(config: CacheConfig, now: Callable[[], float] = time.time) -> tuple[Outcome, bool]:
    """What a run would decide, writing nothing; also whether a build holds the lock now."""
    where = layout(config, create=False)
    found = scan(where.workspace, where.rules, config.jobs, HashProgress(config.progress))
    digest = inputs_digest(found.entries)
    busy = os.path.isdir(where.state) and CacheLock(where.state, 0, lambda _: None).held_elsewhere()
    old: Stamp | StampProblem = (
        read_stamp(where.state) if os.path.isdir(where.state) else StampProblem.MISSING
    )
    interrupted = not busy and os.path.lexists(os.path.join(where.state, MARKER_NAME))
    targets = found.entries
    if config.local:
        view = view_copy(where, old, [e.path for e in found.entries], config.jobs)
        interrupted = interrupted or view.drifted
        targets = view.entries
    newest = None
    if not isinstance(old, Stamp) or old.digest != digest or interrupted:
        newest = newest_artifact(where, config, [e.path for e in found.entries])
    decision = decide(old, digest, now(), newest, interrupted=interrupted)
    if config.local:
        current = {e.path: e for e in targets}
        would = sum(
            1
            for e in found.entries
            if e.path not in current or current[e.path].mtime_ns != decision.stamp_time * 10**9
        )
    else:
        would = len(misaligned(found.entries, decision.stamp_time))
    outcome = Outcome(
        decision,
        digest,
        len(found.entries),
        found.bytes_hashed,
        would,
        found.skipped,
        (),
        where.build_dir,
    )
    return outcome, busy
