"""Cases of the routing suite: deployments, request shapes, and the expected route (the oracle).

The oracle is written from parser-selection.md, independently of `parsers.routing`, so the suite
checks the implementation against the contract rather than against itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parser_modes import PARSER_MODES

# The per-family call markup comes from the parser suite's shared samples (verified there).
from parser_samples import CallPiece, all_lossless


@dataclass(frozen=True)
class Deployment:
    id: str
    tool_parser: str | None
    reasoning_parser: str | None
    family: str | None  # registry family key
    v2_only: bool = False


DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("qwen3-hermes", "hermes", "qwen3", "qwen3"),
    Deployment("qwen3-coder", "qwen3_coder", "qwen3", "qwen3"),
    Deployment("glm", "glm47", "glm45", "glm"),
    Deployment("deepseek-v4", "deepseek_v4", "deepseek_v4", "deepseek_v4"),
    Deployment("deepseek-v41", "deepseek_v41", "deepseek_v41", "deepseek_v41", v2_only=True),
    Deployment("kimi-k2", "kimi_k2", "kimi_k25", "kimi_k2"),
    Deployment("kimi-k3", "kimi_k3", "kimi_k3", "kimi_k3"),
    Deployment("gemma4", "gemma4", "gemma4", "gemma4"),
    Deployment("muse", "muse", "muse", "muse", v2_only=True),
    # Pair shapes other than "both": a tool parser alone, a reasoning parser alone.
    Deployment("qwen3-coder-tool-only", "qwen3_coder", None, "qwen3"),
    Deployment("qwen3-reasoning-only", None, "qwen3", "qwen3"),
    Deployment("muse-reasoning-only", None, "muse", "muse", v2_only=True),
    Deployment("no-parser", None, None, None),
)

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}

# Request shapes (the parts of a request the route depends on), each with the tool declared.
SHAPES: dict[str, dict[str, Any]] = {
    "tool_choice-unset": {},
    "auto": {"tool_choice": "auto"},
    "none": {"tool_choice": "none"},
    "required": {"tool_choice": "required"},
    "named": {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "structural-tag": {
        "tool_choice": "auto",
        "response_format": {"type": "structural_tag", "structures": [], "triggers": []},
    },
}
FORCED = {"required", "named"}

# The variant ids of `parser_modes.PARSER_MODES` -> the DYN_PARSER_VERSION they set.
MODE_VALUE: dict[str, str | None] = {"unset": None, "v1": "1", "v2": "2"}
# Plus `session`: no env of its own, so the suite's mode (nox -s test-v1 / test-v2) applies;
# that variant is what still runs, and means something, under --parser-mode-only.
MODES: dict[str, dict[str, str | None]] = {**PARSER_MODES, "session": {}}


def mode_value(variant: str, environ: Mapping[str, str]) -> str | None:
    """The DYN_PARSER_VERSION a variant runs under (`session`: whatever the child inherited)."""
    if variant == "session":
        return environ.get("DYN_PARSER_VERSION")
    return MODE_VALUE[variant]


def request_for(shape: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]} | {
        k: v for k, v in SHAPES[shape].items()
    }


def expected_route(deployment: Deployment, shape: str, value: str | None) -> str:
    """`pass_through`, `legacy_jail`, `parser_v2`, or the error: `ConfigError` (startup) or
    `InvalidRequest` (HTTP 400), for DYN_PARSER_VERSION=`value`. Spec section 4, read
    literally (an empty value counts as unset)."""
    if value in ("", "auto"):
        value = None
    if value not in (None, "1", "2"):
        return "ConfigError"
    forced = shape in FORCED
    if deployment.tool_parser is None and deployment.reasoning_parser is None:
        if not forced:
            return "pass_through"
        # Only the jail serves a forced choice without a tool parser; V2 rejects it.
        return "InvalidRequest" if value == "2" else "legacy_jail"
    if value == "1":
        return "ConfigError" if deployment.v2_only else "legacy_jail"
    if value == "2" or deployment.v2_only:
        # V2 serves every request of the family, except a forced choice without a tool
        # parser: only the jail parses those, and V2 must refuse rather than fall back.
        return "InvalidRequest" if forced and deployment.tool_parser is None else "parser_v2"
    if forced or shape == "structural-tag":
        return "legacy_jail"
    if deployment.tool_parser == "qwen3_coder" and shape in ("tool_choice-unset", "auto"):
        return "parser_v2"
    return "legacy_jail"


@dataclass(frozen=True)
class StreamCase:
    id: str
    tool_parser: str
    piece: CallPiece
    prompt: str | None
    v2_only: bool

    def tools(self) -> list[dict[str, Any]]:
        properties = {key: _schema(value) for key, value in self.piece.arguments.items()}
        parameters = {"type": "object", "properties": properties}
        return [
            {"type": "function", "function": {"name": self.piece.name, "parameters": parameters}}
        ]


def _schema(value: Any) -> dict[str, Any]:
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}
    return {"type": kinds.get(type(value), "object")}


def stream_cases() -> list[StreamCase]:
    """One well-formed call per tool-call parser, tool parser only (no reasoning involved)."""
    seen: dict[str, StreamCase] = {}
    for item in all_lossless():
        if item.tool_parser is None or not item.calls or item.tool_parser in seen:
            continue
        seen[item.tool_parser] = StreamCase(
            item.tool_parser,
            item.tool_parser,
            item.calls[0],
            item.prompt,
            1 not in item.generations,
        )
    return sorted(seen.values(), key=lambda c: c.id)


def same_json(text: str, value: Any) -> bool:
    return bool(json.loads(text) == value)
