"""pytest's initial configuration object, built by the fork server so that each child need not.

Every pytest session starts with `_pytest.config.get_config`: a new plugin manager, a new
`Config`, and the registration of pytest's ~30 built-in plugins (each registration inspects the
plugin's hooks and replays `pytest_addoption` into the new option parser): a sixth of a forked
child's session. Its only inputs are the `-p no:NAME` arguments (which built-in plugins to
leave out) and the invocation parameters (arguments, plugins, working directory), which are
plain attributes set afterwards. No project code runs there: conftests, `-p` plugins, entry-point
plugins and the ini file are all read later, by `Config.parse`, in the child.

So the server builds one for each set of `-p no:` arguments it sees, before forking; the child
takes its copy the first time `get_config` is called with those arguments and pytest's `prog`,
with its own invocation parameters. Any other call (a nested `pytest.main` in a test, other
arguments) builds a fresh one as usual. With `PYTEST_DEBUG` set (pytest then traces to the
stderr of the process that built it) nothing is prebuilt.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from typing import Any

from _pytest import config as _config

PROG = "pytest.main()"  # what pytest.main passes to get_config

_original_get_config = _config.get_config
# `-p no:` arguments -> a Config (None: it failed to build)
_built: dict[tuple[str, ...], _config.Config | None] = {}


def excluded(args: Sequence[str]) -> tuple[str, ...]:
    """The `-p no:NAME` arguments, read as `get_config` reads them."""
    found: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "-p":
            if index >= len(args):
                break
            value = args[index]
            index += 1
        elif arg.startswith("-p"):
            value = arg[2:]
        else:
            continue
        if value.strip().startswith("no:"):
            found.append(value.strip())
    return tuple(found)


def prepare(args: Sequence[str]) -> bool:
    """Build the configuration object a child started with `args` will need (the server, before
    forking); True when one was built now (the caller may then freeze the new objects)."""
    key = excluded(args)
    if key in _built or os.environ.get("PYTEST_DEBUG"):
        return False
    try:
        _built[key] = _original_get_config(list(args), None, prog=PROG)
    except Exception:  # a bad `-p no:` or another pytest: the child builds it and says why
        _built[key] = None
    return True


def use(args: Sequence[str]) -> bool:
    """Let this process's next `get_config(args)` take the prebuilt object (the child, before
    pytest starts). False when there is none for these arguments."""
    key = excluded(args)
    prebuilt = _built.pop(key, None)
    _built.clear()  # the rest is the server's business
    if prebuilt is None:
        return False

    def get_config(
        args: Any = None, plugins: Any = None, *, prog: str | None = None
    ) -> _config.Config:
        _config.get_config = _original_get_config  # once: later sessions build their own
        if prog != PROG or excluded(list(args or ())) != key:
            return _original_get_config(args, plugins, prog=prog)
        assert prebuilt is not None
        prebuilt.invocation_params = _config.Config.InvocationParams(
            args=args or (), plugins=plugins, dir=pathlib.Path.cwd()
        )
        return prebuilt

    _config.get_config = get_config
    return True


def built() -> int:
    return sum(config is not None for config in _built.values())
