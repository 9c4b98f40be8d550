"""Family grammar registry: canonical parser names (parsers.registry) -> grammar objects.

Each family's grammar module (`Family.grammar_module`, declared in its facts module) exports
two tables keyed by canonical name: `TOOL_GRAMMARS: Mapping[str, AnyToolGrammar]` and
`REASONING_GRAMMARS: Mapping[str, AnyReasoningGrammar]` (plain dicts, or `LazyGrammars` when a
family's grammars live in separate modules). Grammar modules are imported lazily, so a family
that is not implemented yet only fails when it is used, with a ConfigError saying so.

This package's own import stays light (no grammar code): the registry imports the families'
facts modules (`parsers/families/<key>_facts.py`) through it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from parsers import registry  # the registry imports our facts modules: used at call time only
from parsers.errors import ConfigError

if TYPE_CHECKING:
    from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar
    from parsers.family import Family

_G = TypeVar("_G")


def _module(family: Family) -> ModuleType:
    path = family.grammar_module
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as err:
        if err.name != path:
            raise
        raise ConfigError(f"family {family.key!r} is not implemented yet ({path})") from err


def _pick(kind: str, canonical: str, grammars: Mapping[str, _G]) -> _G:
    try:
        return grammars[canonical]
    except KeyError:
        raise ConfigError(f"{kind} parser {canonical!r} has no grammar yet") from None


def tool_grammar(canonical: str) -> AnyToolGrammar:
    """The grammar of a canonical tool parser name (e.g. "hermes")."""
    entry = registry.TOOL_PARSERS[canonical]
    grammars: Mapping[str, AnyToolGrammar] = _module(entry.family).TOOL_GRAMMARS
    return _pick("tool", canonical, grammars)


def reasoning_grammar(canonical: str) -> AnyReasoningGrammar:
    """The grammar of a canonical reasoning parser name (e.g. "qwen3")."""
    entry = registry.REASONING_PARSERS[canonical]
    grammars: Mapping[str, AnyReasoningGrammar] = _module(entry.family).REASONING_GRAMMARS
    return _pick("reasoning", canonical, grammars)
