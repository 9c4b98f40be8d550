"""The environment of an isolated child: a small allowlist of the parent's plus the test's own.

Pure functions of their arguments; the plugin snapshots the parent's environment once at startup.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Mapping

# Variables a Python test process needs to find its interpreter, home and temp dir, and to
# decode text the way the parent does. Nothing here can carry a credential by design.
ALLOWED_NAMES: frozenset[str] = frozenset(
    {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "VIRTUAL_ENV", "PYTHONPATH"}
)
ALLOWED_PREFIXES: tuple[str, ...] = ("LC_",)
# Windows cannot start Python without these; harmless elsewhere.
_WINDOWS_NAMES = frozenset({"SYSTEMROOT", "COMSPEC", "PATHEXT", "TEMP", "TMP", "WINDIR"})

# Never copied from the parent even when a name above would allow it (e.g. `LC_API_KEY`).
_CREDENTIAL = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE|AUTH|COOKIE|SESSION")

EnvSpec = Mapping[str, str | None]


def is_inherited(name: str, extra: Collection[str] = ()) -> bool:
    """Whether the parent's value of `name` is copied into every isolated child (`extra`: the
    names the project's `isolated_inherit` adds; a credential-like name never is)."""
    upper = name.upper()
    if _CREDENTIAL.search(upper):
        return False
    if name in ALLOWED_NAMES or name in extra or name.startswith(ALLOWED_PREFIXES):
        return True
    return sys.platform == "win32" and upper in _WINDOWS_NAMES


def child_environ(
    parent: Mapping[str, str], env: EnvSpec, extra: Collection[str] = ()
) -> dict[str, str]:
    """The allowlisted part of `parent` (and `extra`), then `env` on top (None unsets)."""
    result = {name: value for name, value in parent.items() if is_inherited(name, extra)}
    for name, value in env.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def validate_env(env: object, where: str) -> dict[str, str | None]:
    """Check a marker's `env` argument; the error names the test and the offending entry."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"{where}: env must be a mapping of NAME -> str | None, got {env!r}")
    checked: dict[str, str | None] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise ValueError(f"{where}: invalid environment variable name {name!r}")
        if value is not None and not isinstance(value, str):
            raise TypeError(
                f"{where}: env[{name!r}] must be a str or None (None unsets it), got {value!r}"
            )
        if value is not None and "\0" in value:
            raise ValueError(f"{where}: env[{name!r}] contains a NUL character")
        checked[name] = value
    return checked


def describe(env: EnvSpec) -> str:
    """`A=1 B=unset` — how an env spec reads in ids and messages."""
    if not env:
        return "(allowlist only)"
    return " ".join(f"{k}={'<unset>' if v is None else v}" for k, v in sorted(env.items()))
