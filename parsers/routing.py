"""Route selection (docs/parser-selection.md): one pure function of (settings, request facts).

Only three things decide the route: the request's `tool_choice` mode, whether it is a
structural-tag request, and (through the settings) which parsers the deployment configured
(`route_for`; `select_route` reads the first two from a request mapping).

A structural-tag request is one that asks the engine for structural-tag constrained output in
any of the spellings the engines accept: `response_format: {"type": "structural_tag", ...}`
(vLLM, SGLang), `structured_outputs: {"structural_tag": ...}` (vLLM >= 0.12) or a top-level
`structural_tag` (older vLLM extra parameter).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parsers.errors import InvalidRequest
from parsers.plan import ToolMode
from parsers.registry import FAMILIES
from parsers.settings import ALIAS_VAR, VERSION_VAR, ParserSettings, family_by_key
from parsers.types import RouteKind


@dataclass(frozen=True, slots=True)
class Route:
    """The route a request takes, and the family and generation serving it."""

    kind: RouteKind
    family: str | None
    generation: int | None  # 1, 2, or None for pass_through


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """The request's `tool_choice`, validated."""

    mode: ToolMode
    name: str | None = None  # the function name under a named choice

    @property
    def forced(self) -> bool:
        return self.mode in ("required", "named")

    def describe(self) -> str:
        return f"named tool_choice {self.name!r}" if self.name else f"tool_choice {self.mode!r}"


PASS_THROUGH = Route("pass_through", None, None)

# Family defaults under unset/`auto` (docs/parser-selection.md), from the families' facts
# (`Family.v2_default_tools`): tool parsers whose unforced, non-structural-tag requests go to
# V2. V2-only families come from the registry too (`Family.generations`).
# (The isolation tests monkeypatch this to prove the default-route test can fail.)
V2_DEFAULT_TOOL_PARSERS: frozenset[str] = frozenset(
    name for family in FAMILIES for name in family.v2_default_tools
)

_SHAPES = '"none", "auto", "required" or {"type": "function", "function": {"name": "..."}}'


def parse_tool_choice(choice: object) -> ToolChoice:
    """A request's `tool_choice` value; an unknown shape is an InvalidRequest (HTTP 400)."""
    if choice is None or choice == "auto":
        return ToolChoice("auto")
    if choice == "none":
        return ToolChoice("none")
    if choice == "required":
        return ToolChoice("required")
    if isinstance(choice, Mapping):
        function = choice.get("function")
        # `type` may be omitted (it has one allowed value), but no other type is served.
        if choice.get("type", "function") == "function" and isinstance(function, Mapping):
            name = function.get("name")
            if isinstance(name, str) and name:
                return ToolChoice("named", name)
    raise InvalidRequest(
        f"unsupported tool_choice {_brief(choice)}; expected {_SHAPES}", param="tool_choice"
    )


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def is_structural_tag(request: Mapping[str, Any]) -> bool:
    fmt = request.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "structural_tag":
        return True
    outputs = request.get("structured_outputs")
    if isinstance(outputs, Mapping) and outputs.get("structural_tag") is not None:
        return True
    return request.get("structural_tag") is not None


def _jail_only(choice: ToolChoice, why: str, remedy: str) -> InvalidRequest:
    return InvalidRequest(
        f"{choice.describe()} needs a tool-call parser, and none is configured; only the legacy "
        f"jail parses forced choices without one, and {why}. {remedy}",
        param="tool_choice",
    )


def _v2_rejection(settings: ParserSettings, choice: ToolChoice) -> InvalidRequest:
    family = family_by_key(settings.family)
    if settings.version != "2" and family is not None:
        # A V2-only family under auto: no generation setting helps, only a tool parser does.
        return _jail_only(
            choice,
            f"{family.title} is served by the unified parser only (as with {VERSION_VAR}=2)",
            "Configure a tool-call parser (--tool-call-parser) for this deployment",
        )
    selected = f"{VERSION_VAR}=2"
    if settings.version_source == ALIAS_VAR:
        selected = f"{ALIAS_VAR}=true (meaning {VERSION_VAR}=2)"
    return _jail_only(
        choice,
        f"{selected} selects the unified parser for every request",
        f"Configure a tool-call parser (--tool-call-parser), or set {VERSION_VAR}=1 or auto",
    )


def select_route(settings: ParserSettings, request: Mapping[str, Any]) -> Route:
    """The route that serves `request` (a mapping); raises InvalidRequest when none can
    (HTTP 400)."""
    return route_for(
        settings, parse_tool_choice(request.get("tool_choice")), is_structural_tag(request)
    )


def route_for(settings: ParserSettings, choice: ToolChoice, structural_tag: bool) -> Route:
    """The route for a request's typed tool choice and whether it asks for a structural tag;
    raises InvalidRequest when none can serve it (HTTP 400)."""
    if settings.tool_parser is None and settings.reasoning_parser is None:
        if not choice.forced:
            return PASS_THROUGH
        if settings.version == "2":
            raise _v2_rejection(settings, choice)
        # The jail reads the guided-JSON answer of a forced choice without a family grammar.
        return Route("legacy_jail", None, 1)
    family = family_by_key(settings.family)
    v2_only = family is not None and 1 not in family.generations
    if settings.version != "auto":
        generation = int(settings.version)
    elif v2_only:
        generation = 2
    elif choice.forced or structural_tag:
        generation = 1
    elif settings.tool_parser in V2_DEFAULT_TOOL_PARSERS and choice.mode == "auto":
        generation = 2
    else:
        generation = 1
    if generation == 2 and choice.forced and settings.tool_parser is None:
        raise _v2_rejection(settings, choice)
    return Route("parser_v2" if generation == 2 else "legacy_jail", settings.family, generation)
