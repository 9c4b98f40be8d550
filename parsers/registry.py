"""Registry of model families and their parser names (docs/parsers.md).

Every family declares its facts once, in `parsers/families/<key>_facts.py` (`parsers.family`);
this module only lists those modules and derives the name tables from them.

Names are case-insensitive and `-`/`_` are equivalent. A deployment names a tool-call parser
and/or a reasoning parser; both must belong to one family when both are set.
"""

from __future__ import annotations

from dataclasses import dataclass

from parsers.errors import ConfigError
from parsers.families import (
    deepseek_v4_facts,
    deepseek_v41_facts,
    gemma4_facts,
    glm_facts,
    kimi_k2_facts,
    kimi_k3_facts,
    muse_facts,
    qwen3_facts,
)
from parsers.family import Family

__all__ = ["FAMILIES", "REASONING_PARSERS", "TOOL_PARSERS", "Family", "ParserName"]


@dataclass(frozen=True, slots=True)
class ParserName:
    """What a parser name (as a deployment writes it) stands for."""

    canonical: str  # the grammar's name, e.g. "hermes" for the alias "qwen3"
    family: Family


# The registered families, in the order error messages and docs list them.
FAMILIES: tuple[Family, ...] = (
    glm_facts.FACTS,
    deepseek_v4_facts.FACTS,
    deepseek_v41_facts.FACTS,
    kimi_k2_facts.FACTS,
    kimi_k3_facts.FACTS,
    gemma4_facts.FACTS,
    muse_facts.FACTS,
    qwen3_facts.FACTS,
)

# name as written (normalized) -> (canonical grammar name, family)
TOOL_PARSERS: dict[str, ParserName] = {
    name: ParserName(canonical, family)
    for family in FAMILIES
    for name, canonical in family.tool_parsers
}

REASONING_PARSERS: dict[str, ParserName] = {
    family.reasoning_parser: ParserName(family.reasoning_parser, family) for family in FAMILIES
}


def normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _resolve(kind: str, flag: str, name: str, table: dict[str, ParserName]) -> ParserName:
    if not isinstance(name, str):
        raise ConfigError(f"{kind} parser for {flag} must be a name (text), got {name!r}")
    found = table.get(normalize(name))
    if found is None:
        known = ", ".join(sorted(table))
        raise ConfigError(f"unknown {kind} parser {name!r} for {flag}; known names: {known}")
    return found


def resolve_tool_parser(name: str, flag: str = "--tool-call-parser") -> ParserName:
    """Look up a tool-call parser name; ConfigError names `flag` and lists known names."""
    return _resolve("tool-call", flag, name, TOOL_PARSERS)


def resolve_reasoning_parser(name: str, flag: str = "--reasoning-parser") -> ParserName:
    """Look up a reasoning parser name; ConfigError names `flag` and lists known names."""
    return _resolve("reasoning", flag, name, REASONING_PARSERS)
