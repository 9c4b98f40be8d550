"""Tool-call and reasoning parsing for eight model families, in two generations.

Public API (docs/parsers.md): `parse`, `StreamParser`, `stream`, `load_settings`,
`select_route`, the result types and the typed errors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parsers.api import StreamParser, parse, stream
    from parsers.errors import ConfigError, InvalidRequest
    from parsers.registry import FAMILIES, REASONING_PARSERS, TOOL_PARSERS
    from parsers.routing import Route, select_route
    from parsers.settings import ParserSettings, load_settings
    from parsers.types import Delta, ParsedMessage, ToolCall, ToolCallDelta

# Each public name is imported from its module on first use: a process that only reads its
# settings and picks a route (every isolated routing test's child) does not pay for importing
# the streaming runner and its grammars (most of `import parsers`).
_EXPORTS: dict[str, str] = {
    "StreamParser": "parsers.api",
    "parse": "parsers.api",
    "stream": "parsers.api",
    "ConfigError": "parsers.errors",
    "InvalidRequest": "parsers.errors",
    "FAMILIES": "parsers.registry",
    "REASONING_PARSERS": "parsers.registry",
    "TOOL_PARSERS": "parsers.registry",
    "Route": "parsers.routing",
    "select_route": "parsers.routing",
    "ParserSettings": "parsers.settings",
    "load_settings": "parsers.settings",
    "Delta": "parsers.types",
    "ParsedMessage": "parsers.types",
    "ToolCall": "parsers.types",
    "ToolCallDelta": "parsers.types",
}

__all__ = [
    "FAMILIES",
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "ConfigError",
    "Delta",
    "InvalidRequest",
    "ParsedMessage",
    "ParserSettings",
    "Route",
    "StreamParser",
    "ToolCall",
    "ToolCallDelta",
    "load_settings",
    "parse",
    "select_route",
    "stream",
]


if not TYPE_CHECKING:  # for type checkers the imports above are the attributes

    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            globals()[name] = value  # once: later lookups are plain attribute reads
            return value
        if not name.startswith("_"):
            # `parsers.policy` after a bare `import parsers` kept working when every module
            # was imported eagerly; it still does (importing sets the attribute).
            try:
                return importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
