"""Deployment settings read once at startup (spec section 4). Placeholder: see issue 4."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Version = Literal["auto", "1", "2"]


@dataclass(frozen=True)
class ParserSettings:
    version: Version = "auto"
    tool_parser: str | None = None  # canonical grammar name
    reasoning_parser: str | None = None  # canonical reasoning parser name
    family: str | None = None  # registry family key
    thinking_default: bool | None = None  # deployment default for thinking (None: family's)
