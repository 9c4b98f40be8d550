"""Registry of model families and their parser names (docs/parsers.md).

Names are case-insensitive and `-`/`_` are equivalent. A deployment names a tool-call parser
and/or a reasoning parser; both must belong to one family when both are set.
"""

from __future__ import annotations

from parsers.errors import ConfigError
from parsers.record import Frozen, set_field


class Family(Frozen):
    """A model family: its parsers share reasoning markers and generations."""

    key: str
    title: str
    generations: frozenset[int]  # {1, 2}, or {2} for V2-only families
    reasoning_default_on: bool  # thinking default when nothing in the request says otherwise

    def __init__(
        self, key: str, title: str, generations: frozenset[int], reasoning_default_on: bool
    ) -> None:
        set_field(self, "key", key)
        set_field(self, "title", title)
        set_field(self, "generations", generations)
        set_field(self, "reasoning_default_on", reasoning_default_on)


class ParserName(Frozen):
    """What a parser name (as a deployment writes it) stands for."""

    canonical: str  # the grammar's name, e.g. "hermes" for the alias "qwen3"
    family: Family

    def __init__(self, canonical: str, family: Family) -> None:
        set_field(self, "canonical", canonical)
        set_field(self, "family", family)


GLM = Family("glm", "GLM 4.5 / 4.6 / 4.7", frozenset({1, 2}), True)
DEEPSEEK_V4 = Family("deepseek_v4", "DeepSeek V4", frozenset({1, 2}), True)
DEEPSEEK_V41 = Family("deepseek_v41", "DeepSeek V4.1", frozenset({2}), True)
KIMI_K2 = Family("kimi_k2", "Kimi K2 / K2.5", frozenset({1, 2}), True)
KIMI_K3 = Family("kimi_k3", "Kimi K3", frozenset({1, 2}), True)
GEMMA4 = Family("gemma4", "Gemma 4", frozenset({1, 2}), False)
MUSE = Family("muse", "Muse", frozenset({2}), True)
QWEN3 = Family("qwen3", "Qwen3", frozenset({1, 2}), True)

FAMILIES: tuple[Family, ...] = (
    GLM,
    DEEPSEEK_V4,
    DEEPSEEK_V41,
    KIMI_K2,
    KIMI_K3,
    GEMMA4,
    MUSE,
    QWEN3,
)

# name as written (normalized) -> (canonical grammar name, family)
TOOL_PARSERS: dict[str, ParserName] = {
    "glm47": ParserName("glm47", GLM),
    "glm45": ParserName("glm47", GLM),
    "deepseek_v4": ParserName("deepseek_v4", DEEPSEEK_V4),
    "deepseek_v41": ParserName("deepseek_v41", DEEPSEEK_V41),
    "kimi_k2": ParserName("kimi_k2", KIMI_K2),
    "kimi_k3": ParserName("kimi_k3", KIMI_K3),
    "gemma4": ParserName("gemma4", GEMMA4),
    "muse": ParserName("muse", MUSE),
    "muse_glimmer": ParserName("muse", MUSE),
    "hermes": ParserName("hermes", QWEN3),
    "qwen3": ParserName("hermes", QWEN3),
    "qwen25": ParserName("hermes", QWEN3),
    "qwen3_coder": ParserName("qwen3_coder", QWEN3),
}

REASONING_PARSERS: dict[str, ParserName] = {
    "glm45": ParserName("glm45", GLM),
    "deepseek_v4": ParserName("deepseek_v4", DEEPSEEK_V4),
    "deepseek_v41": ParserName("deepseek_v41", DEEPSEEK_V41),
    "kimi_k25": ParserName("kimi_k25", KIMI_K2),
    "kimi_k3": ParserName("kimi_k3", KIMI_K3),
    "gemma4": ParserName("gemma4", GEMMA4),
    "muse": ParserName("muse", MUSE),
    "qwen3": ParserName("qwen3", QWEN3),
}


def normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _resolve(kind: str, flag: str, name: str, table: dict[str, ParserName]) -> ParserName:
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
