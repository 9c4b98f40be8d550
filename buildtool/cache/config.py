"""Settings of one cache-build run, read once from the command line into a frozen object."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CacheConfig:
    workspace: bytes  # absolute, symlinks resolved
    cache: bytes  # absolute, symlinks resolved; created when missing
    excludes: tuple[str, ...] = ()
    clean_on_removal: tuple[bytes, ...] = ()  # relative to the build folder, or absolute
    artifact_dirs: tuple[bytes, ...] = ()  # extra output folders besides the cache folder
    local: bool = False
    jobs: int = 1
    lock_timeout: float = 3600.0
    progress: bool = False  # draw a bar (the CLI sets it when stderr is a terminal)
    # start the build only once the clock has passed T, so its outputs are newer than the
    # inputs and the next unchanged run reuses them (cargo's dep-info carries the start time)
    wait_for_stamp_time: bool = True
