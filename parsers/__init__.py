"""Tool-call and reasoning parsing for eight model families, in two generations.

Public API (spec `parsers.md`): `parse`, `StreamParser`, `stream`, `load_settings`,
`select_route`, the result types and the typed errors.
"""

from parsers.api import StreamParser, parse, stream
from parsers.errors import ConfigError, InvalidRequest
from parsers.registry import FAMILIES, REASONING_PARSERS, TOOL_PARSERS
from parsers.routing import Route, select_route
from parsers.settings import ParserSettings, load_settings
from parsers.types import Delta, ParsedMessage, ToolCall, ToolCallDelta

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
