"""Deployment settings, read and validated once at startup (docs/parser-selection.md).

`load_settings` is the only place that reads the environment; everything downstream receives the
frozen `ParserSettings`. Every rejection is a `ConfigError` naming the variable or flag at fault
and the values it accepts, so an operator can fix the deployment from the message alone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from parsers.errors import ConfigError
from parsers.registry import FAMILIES, Family, resolve_reasoning_parser, resolve_tool_parser

Version = Literal["auto", "1", "2"]
VersionSource = Literal[
    "default", "DYN_PARSER_VERSION", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2", "library"
]

VERSION_VAR = "DYN_PARSER_VERSION"
ALIAS_VAR = "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"

VERSION_VALUES: tuple[str, ...] = ("auto", "1", "2")
_ALIAS_TRUE = frozenset({"true", "1", "on", "yes"})
_ALIAS_FALSE = frozenset({"false", "0", "off", "no"})
ALIAS_ACCEPTED = "true/false, 1/0, on/off, yes/no (any case)"
VERSION_ACCEPTED = "auto, 1 or 2 (or leave it unset)"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ParserSettings:
    """The deployment's parser configuration, read once at startup (`load_settings`)."""

    version: Version = "auto"
    tool_parser: str | None = None  # canonical grammar name
    reasoning_parser: str | None = None  # canonical reasoning parser name
    family: str | None = None  # registry family key
    thinking_default: bool | None = None  # deployment default for thinking (None: family's)
    # Where `version` came from; error messages and the startup log line use it.
    version_source: VersionSource = "default"

    def describe(self) -> str:
        """One line for the startup log: what was selected and why."""
        how = {"auto": "family defaults", "1": "V1 (legacy jail)", "2": "V2 (unified parser)"}
        source = "unset" if self.version_source == "default" else f"from {self.version_source}"
        return (
            f"parser generation: {how[self.version]} ({source}); tool-call parser: "
            f"{self.tool_parser or 'none'}; reasoning parser: {self.reasoning_parser or 'none'}"
        )


def family_by_key(key: str | None) -> Family | None:
    return next((f for f in FAMILIES if f.key == key), None)


def _printable(value: str) -> str:
    """repr of an environment value; undecodable bytes shown as bytes, not as surrogates."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return repr(value.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:
            # a surrogate that stands for no byte (`\ud800`: not from os.environ's decoding)
            return ascii(value)
    return repr(value)


def _read_raw(
    environ: Mapping[str, str], name: str, accepted: str
) -> tuple[str | None, str | None]:
    """(value, problem) of variable `name`: None value when unset, empty (counts as unset) or
    not UTF-8 (then the problem says so)."""
    raw = environ.get(name)
    if raw is None or raw == "":
        return None, None
    if not isinstance(raw, str):
        return None, f"{name}={raw!r} is not text; accepted values: {accepted}"
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        # os.environ decodes undecodable bytes as lone surrogates (surrogateescape).
        return None, f"{name}={_printable(raw)} is not valid UTF-8; accepted values: {accepted}"
    return raw, None


def _read_version(environ: Mapping[str, str]) -> tuple[Version | None, str | None]:
    """(value, problem). None value means unset; an empty string counts as unset."""
    raw, problem = _read_raw(environ, VERSION_VAR, VERSION_ACCEPTED)
    if raw is None:
        return None, problem
    if raw == "auto":
        return "auto", None
    if raw == "1":
        return "1", None
    if raw == "2":
        return "2", None
    hint = ""
    if not raw.strip():
        hint = " (only whitespace: leave it unset or empty for family defaults)"
    elif raw.strip() != raw:
        hint = " (surrounding whitespace is not allowed)"
    elif raw.strip().lower() in {"v1", "v2"}:
        hint = f" (write {raw.strip()[1:]!r}, without the 'v')"
    return None, f"{VERSION_VAR}={_printable(raw)} is not accepted{hint}; use {VERSION_ACCEPTED}"


def _read_alias(environ: Mapping[str, str]) -> tuple[bool | None, str | None]:
    raw, problem = _read_raw(environ, ALIAS_VAR, ALIAS_ACCEPTED)
    if raw is None:
        return None, problem
    if raw.lower() in _ALIAS_TRUE:
        return True, None
    if raw.lower() in _ALIAS_FALSE:
        return False, None
    hint = ""
    if not raw.strip():
        hint = " (only whitespace: leave it unset or empty)"
    elif raw.strip() != raw:
        hint = " (surrounding whitespace is not allowed)"
    return None, (
        f"{ALIAS_VAR}={_printable(raw)} is not accepted{hint}; use {ALIAS_ACCEPTED}. "
        f"The variable is deprecated: set {VERSION_VAR}=2 instead"
    )


def resolve_pair(
    tool_parser: str | None,
    reasoning_parser: str | None,
    *,
    tool_flag: str,
    reasoning_flag: str,
) -> tuple[str | None, str | None, Family | None]:
    """Canonical (tool, reasoning, family) for a parser pair; ConfigError names the flags."""
    tool = resolve_tool_parser(tool_parser, tool_flag) if tool_parser is not None else None
    reasoning = (
        resolve_reasoning_parser(reasoning_parser, reasoning_flag)
        if reasoning_parser is not None
        else None
    )
    if tool and reasoning and tool.family != reasoning.family:
        raise ConfigError(
            f"{tool_flag} {tool_parser!r} belongs to family {tool.family.title!r} but "
            f"{reasoning_flag} {reasoning_parser!r} belongs to {reasoning.family.title!r}; "
            "both parsers must belong to one family"
        )
    found = tool or reasoning
    return (
        tool.canonical if tool else None,
        reasoning.canonical if reasoning else None,
        found.family if found else None,
    )


def check_generation(
    family: Family | None, version: Version, source: str, default: str = "auto (or unset)"
) -> None:
    """A generation the family does not have stops startup (V1 with a V2-only family)."""
    if family is None or version == "auto" or int(version) in family.generations:
        return
    only = " or ".join(str(g) for g in sorted(family.generations))
    raise ConfigError(
        f"{source}={version} selects parser generation {version}, but {family.title} is served "
        f"by generation {only} only; for this family use {source} {default} or {only}"
    )


def load_settings(
    environ: Mapping[str, str] = os.environ,
    *,
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    thinking_default: bool | None = None,
    tool_parser_flag: str = "--tool-call-parser",
    reasoning_parser_flag: str = "--reasoning-parser",
) -> ParserSettings:
    """Read `DYN_PARSER_VERSION` (and its deprecated alias) and validate the parser pair.

    Call once at startup and pass the result down. An empty value counts as unset (so
    `DYN_PARSER_VERSION=` from a compose file means family defaults); any other value outside
    the accepted set, including surrounding whitespace, raises `ConfigError`.
    """
    version, version_problem = _read_version(environ)
    alias, alias_problem = _read_alias(environ)
    problems = [p for p in (version_problem, alias_problem) if p]
    if problems:
        raise ConfigError("; ".join(problems))
    source: VersionSource = "default" if version is None else "DYN_PARSER_VERSION"
    if alias is not None:
        log.warning(
            "%s is deprecated; set %s instead (auto, 1 or 2). %s",
            ALIAS_VAR,
            VERSION_VAR,
            f"Treating it as {VERSION_VAR}=2." if alias else "A false value selects nothing.",
        )
    if alias:
        if version == "1":
            raise ConfigError(
                f"{ALIAS_VAR} is true (meaning {VERSION_VAR}=2) but {VERSION_VAR}=1; "
                f"they contradict each other: unset {ALIAS_VAR} (deprecated) and keep {VERSION_VAR}"
            )
        if version != "2":
            # The alias is an explicit opt-in to V2; `auto` (or unset) does not cancel it.
            version, source = "2", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"
    resolved: Version = version or "auto"
    tool, reasoning, family = resolve_pair(
        tool_parser,
        reasoning_parser,
        tool_flag=tool_parser_flag,
        reasoning_flag=reasoning_parser_flag,
    )
    check_generation(family, resolved, VERSION_VAR)
    if thinking_default is not None and not isinstance(thinking_default, bool):
        raise ConfigError(f"thinking default must be true or false, got {thinking_default!r}")
    settings = ParserSettings(
        version=resolved,
        tool_parser=tool,
        reasoning_parser=reasoning,
        family=family.key if family else None,
        thinking_default=thinking_default,
        version_source=source,
    )
    log.info("%s", settings.describe())
    return settings
