"""What pytest's fixture scan of a plugin finds, learned by the fork server, reused by each child.

Every pytest session creates a fixture manager that scans every registered plugin (pytest's own
modules, the installed plugins, their plugin objects) for fixtures: it lists all of a plugin's
attributes and unwraps each one looking for a fixture definition. The plugins are the same
modules and classes in every child of a fork server, so that scan is the same every time: about
a quarter of a forked child's pytest session.

While the server warms up, `learn()` is on: each scanned plugin's module or class is recorded
with the few attribute names the scan can act on (fixtures, and fixtures hidden behind
decorators, which pytest warns about). A child then scans only those names for the plugins it
inherited; the checks on them are pytest's own, so its fixtures and warnings are the same. A
plugin the server never scanned (a conftest, a project plugin, a test module or class) is new
to the child and scanned in full, as is a module or class whose attributes were added or
removed since (its `__dict__` sizes are compared).

The scan is narrowed by giving pytest's fixture module its own `dir` (a module global, so no
other code is affected): pytest iterates `dir(holder)` and looks each name up on the holder's
module or class; names it cannot act on are skipped.
"""

from __future__ import annotations

import builtins
import types
from typing import Any

from _pytest import fixtures
from _pytest.compat import safe_getattr, safe_isclass

_Owner = type | types.ModuleType
_Entry = tuple[_Owner, tuple[int, ...], list[str]]  # owner, __dict__ sizes, names to scan

_known: dict[int, _Entry] = {}  # id(owner) -> entry; the entry keeps the owner alive
_learning = False


def _owner(holder: object) -> _Owner:
    """The module or class pytest looks fixture attributes up on (as `parsefactories` does)."""
    if not safe_isclass(holder) and not isinstance(holder, types.ModuleType):
        return type(holder)
    return holder  # type: ignore[return-value]


def _sizes(owner: _Owner) -> tuple[int, ...]:
    if isinstance(owner, types.ModuleType):
        return (len(owner.__dict__),)
    return tuple(len(base.__dict__) for base in owner.__mro__)


def _may_act_on(owner: _Owner, name: str) -> bool:
    """Whether pytest's scan can do anything with `name`: a fixture, or one behind wrappers.

    pytest's own checks; they use no fixture-manager state, so they are called without one.
    """
    manager: Any = fixtures.FixtureManager
    raw = manager._lookup_in_type_dict(None, owner, name)
    if raw is not None and manager._find_wrapped_fixture_def(None, raw) is not None:
        return True
    return type(safe_getattr(owner, name, None)) is fixtures.FixtureFunctionDefinition


def _scan_dir(*args: Any) -> list[str]:
    """`dir` as seen by pytest's fixture module."""
    if len(args) != 1:
        return builtins.dir(*args)
    holder = args[0]
    owner = _owner(holder)
    entry = _known.get(id(owner))
    if entry is not None and entry[0] is owner and entry[1] == _sizes(owner):
        return list(entry[2])
    names = builtins.dir(holder)
    if _learning:
        try:
            wanted = [name for name in names if _may_act_on(owner, name)]
        except Exception:  # pytest changed its checks: this plugin is scanned in full
            return names
        _known[id(owner)] = (owner, _sizes(owner), wanted)
    return names


def supported() -> bool:
    """pytest's fixture module scans plugins the way this module expects."""
    manager = fixtures.FixtureManager
    return all(
        hasattr(manager, name) for name in ("_lookup_in_type_dict", "_find_wrapped_fixture_def")
    ) and hasattr(fixtures, "FixtureFunctionDefinition")


def names_to_scan(holder: object) -> list[str]:
    """The attributes of `holder` pytest's scan can act on (a learned plugin's narrowed list)."""
    owner = _owner(holder)
    return [name for name in builtins.dir(holder) if _may_act_on(owner, name)]


def probe_module() -> types.ModuleType:
    """A plugin module with a fixture, a fixture behind a decorator and two other names."""
    import functools

    import pytest

    module = types.ModuleType("fixture_scan_probe")

    def decorate(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

        return wrapper

    module.plain_fixture = pytest.fixture(lambda: 1)  # type: ignore[attr-defined]
    module.plain_fixture.__name__ = "plain_fixture"
    module.hidden_fixture = decorate(pytest.fixture(lambda: 2))  # type: ignore[attr-defined]
    module.helper = lambda: 3  # type: ignore[attr-defined]
    module.CONSTANT = 4  # type: ignore[attr-defined]
    return module


def learn() -> None:
    """Record the plugins scanned from now on (the fork server, before its warm-up)."""
    global _learning
    if supported():
        fixtures.dir = _scan_dir  # type: ignore[attr-defined]
        _learning = True


def stop_learning() -> None:
    """From here on (the server, before it forks): scan only what was learned, learn nothing."""
    global _learning
    _learning = False


def forget() -> None:
    """pytest scans in full again (idempotent)."""
    global _learning
    _learning = False
    _known.clear()
    if getattr(fixtures, "dir", None) is _scan_dir:
        del fixtures.dir  # type: ignore[attr-defined]


def learned() -> int:
    return len(_known)
