"""Route selection: one pure function of (settings, request). Placeholder: see issue 4."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parsers.settings import ParserSettings
from parsers.types import RouteKind


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    family: str | None
    generation: int | None  # 1, 2, or None for pass_through


def select_route(settings: ParserSettings, request: Mapping[str, Any]) -> Route:
    """Placeholder until issue 4: explicit 1 -> V1, otherwise V2; no parser -> pass_through."""
    if settings.tool_parser is None and settings.reasoning_parser is None:
        return Route("pass_through", None, None)
    if settings.version == "1":
        return Route("legacy_jail", settings.family, 1)
    return Route("parser_v2", settings.family, 2)
