"""Which paths under the workspace are inputs (build-cache rule 1). Pure: no file system access.

Paths are bytes relative to the workspace root, components joined by b"/".
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

VCS_NAMES = frozenset({b".git", b".hg", b".svn"})
PYCACHE = b"__pycache__"
# the helper's own folder inside every cache folder: stamp, path list, lock, local worktree
STATE_DIR = b".buildtool"


def _compile(pattern: str) -> re.Pattern[bytes]:
    # fnmatch translates str patterns; latin-1 maps bytes 1:1 so any byte name can be matched
    raw = os.fsencode(pattern).decode("latin-1")
    return re.compile(fnmatch.translate(raw).encode("latin-1"), re.DOTALL)


@dataclass(frozen=True)
class ExcludeGlob:
    """One `--exclude` pattern.

    Without a "/", it matches any single name at any depth (like .gitignore); with a "/", it
    matches the whole workspace-relative path. A trailing "/" restricts it to directories.
    fnmatch rules: `*` and `?` also match "/" in whole-path patterns.
    """

    text: str
    regex: re.Pattern[bytes]
    whole_path: bool
    dirs_only: bool

    @classmethod
    def parse(cls, text: str) -> ExcludeGlob:
        body = text[:-1] if text.endswith("/") else text
        body = body.removeprefix("./")
        if not body or body == "/":
            raise ValueError(f"--exclude {text!r}: empty pattern")
        whole = "/" in body
        return cls(text, _compile(body.lstrip("/")), whole, text.endswith("/"))

    def matches(self, rel: bytes, name: bytes, is_dir: bool) -> bool:
        if self.dirs_only and not is_dir:
            return False
        return self.regex.match(rel if self.whole_path else name) is not None


@dataclass(frozen=True)
class InputRules:
    """Exclusions for one workspace root: cache folders inside it, VCS, byte code, globs."""

    excluded_paths: frozenset[bytes]
    globs: tuple[ExcludeGlob, ...]

    @classmethod
    def build(cls, excluded_paths: Iterable[bytes], globs: Iterable[str]) -> InputRules:
        return cls(frozenset(excluded_paths), tuple(ExcludeGlob.parse(g) for g in globs))

    def excluded(self, rel: bytes, name: bytes, is_dir: bool) -> bool:
        """True when `rel` (whose last component is `name`) is not an input."""
        if name in VCS_NAMES:
            return True
        if is_dir:
            if name == PYCACHE:
                return True
        elif name.endswith(b".pyc"):
            return True
        if rel in self.excluded_paths:
            return True
        return any(g.matches(rel, name, is_dir) for g in self.globs)


def relative_inside(root: bytes, path: bytes) -> bytes | None:
    """`path` relative to `root` (both absolute, normalized) if strictly inside it, else None."""
    if path == root:
        return b""
    prefix = root.rstrip(b"/") + b"/"
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None
