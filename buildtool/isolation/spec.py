"""What an `isolated` marker asks for: the environment, the variants, the time limit.

`@pytest.mark.isolated(env={...}, envs=..., timeout=...)`:
- `env`: NAME -> value, or None to unset; applied on top of the allowlisted parent environment.
- `envs`: run the test once per environment: a mapping id -> env (ids are the test ids), or a
  sequence of envs (ids are made from their contents). Each variant's env goes on top of `env`.
- `timeout`: seconds before the parent kills the child (default: the `isolated_timeout` option).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pytest

from buildtool.isolation.environ import EnvSpec, validate_env

MARKER = "isolated"
# The pseudo-argument the variants are parametrized over; a test may request it to learn its
# variant id.
VARIANT_ARG = "isolated_variant"


@dataclass(frozen=True)
class IsolationSpec:
    env: tuple[tuple[str, str | None], ...]  # sorted; None = unset
    variant: str | None
    timeout: float | None

    @property
    def env_map(self) -> dict[str, str | None]:
        return dict(self.env)


def _where(node: pytest.Item | pytest.Function | object) -> str:
    nodeid = getattr(node, "nodeid", None)
    return f"@pytest.mark.isolated on {nodeid or node}"


def _timeout(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{where}: timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def _check_kwargs(mark: pytest.Mark, where: str) -> None:
    unknown = set(mark.kwargs) - {"env", "envs", "timeout"}
    if mark.args or unknown:
        raise TypeError(
            f"{where}: accepted arguments are env=, envs=, timeout= (keywords only); "
            f"got args {mark.args!r}, keywords {sorted(unknown)!r}"
        )


def variant_id(env: EnvSpec) -> str:
    """A readable test id for an unnamed variant: `MODE=1`, `X=unset`."""
    text = "-".join(f"{k}={'unset' if v is None else v}" for k, v in sorted(env.items()))
    return re.sub(r"\s+", "_", text) or "allowlist-only"


def variants_of(marks: Iterable[pytest.Mark], where: str) -> dict[str, dict[str, str | None]]:
    """The `envs=` of the closest marker that has one, as id -> env (empty: not a variant test)."""
    for mark in marks:
        _check_kwargs(mark, where)
        envs = mark.kwargs.get("envs")
        if envs is None:
            continue
        if isinstance(envs, Mapping):
            pairs = [(str(key), value) for key, value in envs.items()]
        elif isinstance(envs, Sequence) and not isinstance(envs, str | bytes):
            pairs = [(variant_id(validate_env(value, where)), value) for value in envs]
        else:
            raise TypeError(f"{where}: envs must be a mapping id -> env or a list of envs")
        if not pairs:
            raise ValueError(f"{where}: envs is empty; give at least one environment")
        result: dict[str, dict[str, str | None]] = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"{where}: envs gives the id {key!r} twice")
            result[key] = validate_env(value, f"{where} (envs[{key!r}])")
        return result
    return {}


def spec_for(item: pytest.Item) -> IsolationSpec | None:
    """The resolved request of an item, or None when it is not marked `isolated`.

    Every `isolated` marker on the item counts; a closer one (parameter, function, class, module)
    overrides the env names a farther one sets. The variant env goes on top.
    """
    marks = list(item.iter_markers(MARKER))  # closest first
    if not marks:
        return None
    where = _where(item)
    env: dict[str, str | None] = {}
    timeout: float | None = None
    for mark in reversed(marks):
        _check_kwargs(mark, where)
        env.update(validate_env(mark.kwargs.get("env"), where))
        timeout = _timeout(mark.kwargs.get("timeout"), where) or timeout
    variant: str | None = None
    callspec = getattr(item, "callspec", None)
    if callspec is not None and VARIANT_ARG in callspec.params:
        variant = str(callspec.params[VARIANT_ARG])
        env.update(variants_of(marks, where)[variant])
    return IsolationSpec(tuple(sorted(env.items())), variant, timeout)
