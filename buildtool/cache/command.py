"""Checking that COMMAND can run before the helper publishes a stamp or moves an mtime.

Found out only when starting it, a missing command would leave a published stamp, rewritten
workspace mtimes and the `building` marker (so the next run rebuilds everything as
"interrupted"). The same lookup the kernel and `subprocess` do: a name with a `/` is a path from
the folder the command runs in, any other name is searched on PATH.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from buildtool.cache.errors import CacheError
from buildtool.fsutil import show


def _runnable(path: bytes) -> str | None:
    """None when `path` is an executable file; else why not."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "command not found"
    except OSError as exc:
        return f"command not usable ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "command not executable (not a regular file)"
    if not os.access(path, os.X_OK):
        return "command not executable"
    return None


def check_command(command: Sequence[str], cwd: bytes, path_env: str | None) -> None:
    """Raise `CacheError` ("command not found: NAME", "command not executable: NAME") unless
    `command[0]` would start from `cwd` with this PATH."""
    name = command[0]
    if not name:
        raise CacheError("command not found: empty COMMAND")
    raw = os.fsencode(name)
    if b"/" in raw:
        problem = _runnable(os.path.join(cwd, raw))
        if problem is not None:
            raise CacheError(f"{problem}: {name}")
        return
    seen_problem: str | None = None
    for folder in (path_env if path_env is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(os.fsencode(folder) or cwd, raw)
        problem = _runnable(candidate)
        if problem is None:
            return
        if problem != "command not found" and seen_problem is None:
            seen_problem = f"{problem}: {name} ({show(candidate)})"
    raise CacheError(seen_problem or f"command not found: {name}")
