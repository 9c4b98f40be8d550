"""The stamp file and the stored path list (build-cache rule 3): format, atomic write, careful read.

stamp (ASCII lines, last line checks all before it, so a torn file never parses):
    buildtool-cache-stamp
    version 1
    digest <64 hex>
    paths <64 hex: hash of the path list>
    time <stamp time T, whole seconds>
    inputs <count>
    check <blake3 of the lines above, 32 hex>

paths: "buildtool-cache-paths 1 <paths hash>\\n" then the relative paths, NUL-separated.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum

from buildtool.cache.digest import path_list_bytes, path_list_hash, short_hash
from buildtool.cache.entries import NotRegular, read_regular
from buildtool.cache.errors import CacheError
from buildtool.fsutil import TEMP_MARK, remove_path, replace_file, show

MAGIC = "buildtool-cache-stamp"
VERSION = 1
STAMP_NAME = b"stamp"
PATHS_NAME = b"paths"
_PATHS_MAGIC = b"buildtool-cache-paths 1 "
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Stamp:
    digest: str
    paths_hash: str
    time: int
    inputs: int


class StampProblem(Enum):
    """Why an existing stamp cannot be used; each one means "changed" (full rebuild)."""

    MISSING = "no stamp yet"
    TORN = "torn stamp"
    FOREIGN = "foreign stamp file"
    UNKNOWN_VERSION = "stamp of an unknown format version"
    NOT_A_FILE = "stamp is not a regular file"


def format_stamp(stamp: Stamp) -> bytes:
    body = (
        f"{MAGIC}\nversion {VERSION}\ndigest {stamp.digest}\npaths {stamp.paths_hash}\n"
        f"time {stamp.time}\ninputs {stamp.inputs}\n"
    ).encode("ascii")
    return body + f"check {short_hash(body)}\n".encode("ascii")


def parse_stamp(data: bytes) -> Stamp | StampProblem:
    """Pure parse: a Stamp, or the reason it cannot be trusted."""
    if not data:
        return StampProblem.TORN
    if not data.startswith(MAGIC.encode() + b"\n"):
        # a prefix of the magic is a write cut short; anything else was not written by us
        return StampProblem.TORN if MAGIC.encode().startswith(data) else StampProblem.FOREIGN
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return StampProblem.TORN
    lines = text.split("\n")
    if len(lines) < 2 or not lines[1].startswith("version "):
        return StampProblem.TORN
    if lines[1] != f"version {VERSION}":
        return StampProblem.UNKNOWN_VERSION if lines[1][8:].isdigit() else StampProblem.TORN
    if len(lines) != 8 or lines[7] != "" or not lines[6].startswith("check "):
        return StampProblem.TORN
    body = "\n".join(lines[:6]) + "\n"
    if lines[6] != f"check {short_hash(body.encode('ascii'))}":
        return StampProblem.TORN
    fields = dict(line.split(" ", 1) for line in lines[2:6] if " " in line)
    try:
        stamp = Stamp(fields["digest"], fields["paths"], int(fields["time"]), int(fields["inputs"]))
    except (KeyError, ValueError):
        return StampProblem.TORN
    if not (_HEX64.fullmatch(stamp.digest) and _HEX64.fullmatch(stamp.paths_hash)):
        return StampProblem.TORN
    return stamp


def read_stamp(state_dir: bytes) -> Stamp | StampProblem:
    """The stamp, never following a symlink nor waiting on a FIFO put in its place."""
    path = os.path.join(state_dir, STAMP_NAME)
    try:
        data = read_regular(path, 4096)
    except NotRegular:
        return StampProblem.NOT_A_FILE
    except OSError as exc:
        raise CacheError(f"cannot read stamp {show(path)}: {exc.strerror}") from exc
    if data is None:
        return StampProblem.MISSING
    return parse_stamp(data)


def write_atomic(directory: bytes, name: bytes, data: bytes, durable: bool = True) -> None:
    """Temporary file in the same folder, fsync, rename, fsync the folder; no temp left.

    `durable=False` skips both fsyncs, for files whose loss after a crash is detected anyway.
    """
    final = os.path.join(directory, name)
    try:
        # clear_dir: a folder put where the file belongs is replaced too, never written into
        replace_file(final, data, durable=durable, clear_dir=True)
    except OSError as exc:
        raise CacheError(f"cannot write {show(final)}: {exc.strerror}") from exc


def remove_stale_temps(state_dir: bytes) -> None:
    """Temporary files left by a helper killed mid-write (call with the lock held)."""
    for name in os.listdir(state_dir):
        if TEMP_MARK in name:
            remove_path(os.path.join(state_dir, name))  # a folder too; links are not followed


def write_stamp(state_dir: bytes, stamp: Stamp) -> None:
    write_atomic(state_dir, STAMP_NAME, format_stamp(stamp))


def write_paths(state_dir: bytes, paths: list[bytes], paths_hash: str) -> None:
    data = _PATHS_MAGIC + paths_hash.encode("ascii") + b"\n" + path_list_bytes(paths)
    # no fsync: the stamp written after it is fsynced (with its folder), and a path list lost
    # in a crash no longer matches the stamp, which reads as "unknown", i.e. clear outputs
    write_atomic(state_dir, PATHS_NAME, data, durable=False)


def read_paths(state_dir: bytes, expected_hash: str) -> list[bytes] | None:
    """The stored path list if it is intact and belongs to the stamp; None otherwise."""
    try:
        data = read_regular(os.path.join(state_dir, PATHS_NAME))
    except (OSError, NotRegular):
        return None
    if data is None:
        return None
    header, sep, body = data.partition(b"\n")
    if not sep or header != _PATHS_MAGIC + expected_hash.encode("ascii"):
        return None
    paths = body.split(b"\0") if body else []
    return paths if path_list_hash(paths) == expected_hash else None
