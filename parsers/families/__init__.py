"""Family grammar registry: canonical parser names (parsers.registry) -> grammar objects.

Each family module (keyed by the registry family key) exports two tables keyed by canonical
name: `TOOL_GRAMMARS: Mapping[str, AnyToolGrammar]` and
`REASONING_GRAMMARS: Mapping[str, AnyReasoningGrammar]` (plain dicts, or `LazyGrammars` when a
family's grammars live in separate modules). Modules are imported lazily, so a family
that is not implemented yet only fails when it is used, with a ConfigError saying so.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TypeVar

from parsers.errors import ConfigError
from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS

# registry family key -> module holding its grammars
FAMILY_MODULES: dict[str, str] = {
    "qwen3": "parsers.families.qwen3",
    "glm": "parsers.families.glm",
    "deepseek_v4": "parsers.families.deepseek_v4",
    "deepseek_v41": "parsers.families.deepseek_v41",
    "kimi_k2": "parsers.families.kimi_k2",
    "kimi_k3": "parsers.families.kimi_k3",
    "gemma4": "parsers.families.gemma4",
    "muse": "parsers.families.muse",
}

_G = TypeVar("_G")


def _module(family: str) -> ModuleType:
    path = FAMILY_MODULES.get(family)
    if path is None:
        raise ConfigError(f"no grammar module registered for family {family!r}")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as err:
        if err.name != path:
            raise
        raise ConfigError(f"family {family!r} is not implemented yet ({path})") from err


def _pick(kind: str, canonical: str, grammars: Mapping[str, _G]) -> _G:
    try:
        return grammars[canonical]
    except KeyError:
        raise ConfigError(f"{kind} parser {canonical!r} has no grammar yet") from None


def tool_grammar(canonical: str) -> AnyToolGrammar:
    """The grammar of a canonical tool parser name (e.g. "hermes")."""
    entry = TOOL_PARSERS[canonical]
    grammars: Mapping[str, AnyToolGrammar] = _module(entry.family.key).TOOL_GRAMMARS
    return _pick("tool", canonical, grammars)


def reasoning_grammar(canonical: str) -> AnyReasoningGrammar:
    """The grammar of a canonical reasoning parser name (e.g. "qwen3")."""
    entry = REASONING_PARSERS[canonical]
    grammars: Mapping[str, AnyReasoningGrammar] = _module(entry.family.key).REASONING_GRAMMARS
    return _pick("reasoning", canonical, grammars)
