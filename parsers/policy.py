"""Request policy (docs/parser-selection.md): settings + request + rendered prompt -> ParsePlan.

Everything here is a pure function of its arguments. Request mistakes raise `InvalidRequest`
(HTTP 400) with `param` naming the offending field, before any parsing starts; the route
itself comes from `parsers.routing.select_route`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from parsers.errors import ConfigError, InvalidRequest
from parsers.plan import ParsePlan
from parsers.record import Frozen, set_field
from parsers.routing import ToolChoice, is_structural_tag, parse_tool_choice, route_for
from parsers.settings import ParserSettings, Version, check_generation, family_by_key, resolve_pair

# reasoning_effort accepted per family. DeepSeek V4.1 renders it into the prompt (parsers.md); the
# other families' templates ignore it, so they accept the OpenAI values and only "none" has an
# effect there (thinking off).
_OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_V41_EFFORTS = frozenset({"none", "low", "high", "max"})
_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema", "structural_tag"})
_THINKING_MODES = {"thinking": True, "chat": False}
_TAIL = 512  # characters of the prompt's end searched for a prefilled marker


class _Markers(Frozen):
    """Regex sources, compiled on first use (`re` caches them): a process compiles only those
    of the parsers it serves."""

    opener: str  # the prompt ends (after rstrip) with this: output starts in reasoning
    closer: str  # the prompt ends with this: the reasoning block is already closed

    def __init__(self, opener: str, closer: str) -> None:
        set_field(self, "opener", opener)
        set_field(self, "closer", closer)


def _literal(marker: str) -> str:
    return re.escape(marker) + r"\Z"


_THINK = _Markers(_literal("<think>"), _literal("</think>"))
# Keyed by canonical reasoning parser name.
MARKERS: dict[str, _Markers] = {
    "qwen3": _THINK,
    "glm45": _THINK,
    "deepseek_v4": _THINK,
    "deepseek_v41": _THINK,
    "kimi_k25": _THINK,
    # Engines may space the channel markers' parts: accept any whitespace between them.
    "kimi_k3": _Markers(
        r"<\|open\|>\s*think\s*<\|sep\|>\Z",
        r"<\|close\|>\s*think\s*<\|sep\|>\Z",
    ),
    "gemma4": _Markers(_literal("<|channel>thought"), _literal("<channel|>")),
    # Muse's prompt ends with `<|start|>assistant`; prefilling the `self` (reasoning) recipient
    # means the output starts in reasoning. A closed self message has no trailing marker.
    "muse": _Markers(r"<\|start\|>\s*assistant\s+to=self\s*<\|message\|>\Z", r"(?!)"),
}
# Output starts in reasoning even without prefill evidence in the prompt (or without a prompt).
_FORCED_START = frozenset({"kimi_k25", "deepseek_v4"})
# Without a prompt, thinking on: the family's chat template opens reasoning in the prompt
# (Kimi K3 `<|open|>think<|sep|>`, DeepSeek V4.1 `<think>`), so the output starts inside it
# and a bare end marker ends it (issue 14, item 3; tests/parsers/test_template_thinking.py
# renders every family's template to check this list).
_PREFILLED_WITHOUT_PROMPT = frozenset({"kimi_k3", "deepseek_v41"})
# A closed reasoning block at the end of the prompt means thinking is off (DeepSeek V4.1).
_CLOSER_MEANS_OFF = frozenset({"deepseek_v41"})
# Without a prompt, thinking turned on by the request itself: Qwen3's thinking checkpoints
# prefill `<think>` (the hybrid ones write it, a leading opener is then markup), so the output
# starts in reasoning. Left to the family default, our Qwen3 template opens nothing.
_PREFILLED_WHEN_ASKED = frozenset({"qwen3"})
# Channel grammars (Kimi K3, Muse) carry the reasoning channel in the tool grammar itself: a
# deployment naming only their tool parser still has its reasoning channel parsed (the plan's
# `reasoning_parser` then names it). Marker families need the reasoning parser named.
# Gemma 4's thought channel is special tokens of its own grammar too: without a reasoning
# parser its markers are markup and its text content.
_CHANNEL_REASONING = {"kimi_k3": "kimi_k3", "muse": "muse", "gemma4": "gemma4"}


def prefill_state(reasoning_parser: str, prompt: str) -> Literal["open", "closed"] | None:
    """'open' when the prompt ends inside reasoning, 'closed' after a closed block, else None."""
    markers = MARKERS.get(reasoning_parser)
    if markers is None:
        return None
    # Only the end matters; bound the regex work for long prompts.
    tail = prompt.rstrip()[-_TAIL:]
    if re.search(markers.opener, tail):
        return "open"
    if re.search(markers.closer, tail):
        return "closed"
    return None


def _bad(param: str, value: object, accepted: str) -> InvalidRequest:
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return InvalidRequest(f"invalid {param} {text}; expected {accepted}", param=param)


def _request_thinking(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind == "enabled":
            return True
        if kind == "disabled":
            return False
    raise _bad("thinking", value, 'true, false, {"type": "enabled"} or {"type": "disabled"}')


def _effort_thinking(value: object, family: str | None) -> bool | None:
    if value is None:
        return None
    if family == "deepseek_v41":
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 100:
            return True
        if isinstance(value, str) and value in _V41_EFFORTS:
            return value != "none"
        raise _bad("reasoning_effort", value, '"none", "low", "high", "max" or an integer 1-100')
    if isinstance(value, str) and value in _OPENAI_EFFORTS:
        return value != "none"
    raise _bad("reasoning_effort", value, ", ".join(f'"{e}"' for e in _OPENAI_EFFORTS))


def _template_thinking(kwargs: object) -> bool | None:
    if kwargs is None:
        return None
    if not isinstance(kwargs, Mapping):
        raise _bad("chat_template_kwargs", kwargs, "an object")
    for key in ("enable_thinking", "thinking"):
        value = kwargs.get(key)
        if value is None:
            continue
        if isinstance(value, bool):
            return value
        raise _bad(f"chat_template_kwargs.{key}", value, "true or false")
    mode = kwargs.get("thinking_mode")
    if mode is None:
        return None
    if isinstance(mode, str) and mode in _THINKING_MODES:
        return _THINKING_MODES[mode]
    raise _bad("chat_template_kwargs.thinking_mode", mode, '"thinking" or "chat"')


def requested_thinking(settings: ParserSettings, request: Mapping[str, Any]) -> bool | None:
    """What the request itself says about thinking (None: nothing), validated."""
    return asked_thinking(
        settings,
        request.get("thinking"),
        request.get("reasoning_effort"),
        request.get("chat_template_kwargs"),
    )


def asked_thinking(
    settings: ParserSettings, thinking: object, reasoning_effort: object, template_kwargs: object
) -> bool | None:
    """`requested_thinking` on the three controls' values (a typed request: no raw body).

    Every control is validated even when a higher one already decided, so a bad value is a
    400 regardless of what else the request says.
    """
    decisions = (
        _request_thinking(thinking),
        _effort_thinking(reasoning_effort, settings.family),
        _template_thinking(template_kwargs),
    )
    return next((d for d in decisions if d is not None), None)


def resolve_thinking(settings: ParserSettings, request: Mapping[str, Any]) -> bool:
    """Whether thinking is on, by the precedence of docs/parser-selection.md (first decided wins):
    the request's own controls, then the configured default, then the family's.

    The sidecar calls this before rendering the prompt; `plan_request` then also looks at the
    rendered prompt's prefill.
    """
    return thinking_for(
        settings,
        request.get("thinking"),
        request.get("reasoning_effort"),
        request.get("chat_template_kwargs"),
    )


def thinking_for(
    settings: ParserSettings, thinking: object, reasoning_effort: object, template_kwargs: object
) -> bool:
    """`resolve_thinking` on the three controls' values (a typed request: no raw body)."""
    return default_thinking(
        settings, asked_thinking(settings, thinking, reasoning_effort, template_kwargs)
    )


def default_thinking(settings: ParserSettings, asked: bool | None) -> bool:
    """Thinking on or off once the request's own answer (`asked`, None: nothing) is known."""
    if asked is not None:
        return asked
    if settings.thinking_default is not None:
        return settings.thinking_default
    family = family_by_key(settings.family)
    return family.reasoning_default_on if family else True


def _declared_tools(request: Mapping[str, Any]) -> tuple[tuple[Mapping[str, Any], ...], list[str]]:
    tools = request.get("tools")
    if tools is None:
        return (), []
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise _bad("tools", tools, "an array of tool objects")
    names: list[str] = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InvalidRequest(
                f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                param=f"tools[{i}].function.name",
            )
        names.append(name)
    return tuple(tools), names


def _check_choice(choice: ToolChoice, names: list[str]) -> None:
    if choice.mode == "required" and not names:
        raise InvalidRequest(
            "tool_choice 'required' needs at least one tool in 'tools'", param="tool_choice"
        )
    if choice.mode == "named" and choice.name not in names:
        declared = ", ".join(repr(n) for n in names) or "none"
        raise InvalidRequest(
            f"tool_choice names function {choice.name!r}, which is not in 'tools' "
            f"(declared: {declared})",
            param="tool_choice",
        )


def _json_answer(request: Mapping[str, Any]) -> bool:
    fmt = request.get("response_format")
    if fmt is None:
        return False
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if not isinstance(kind, str) or kind not in _RESPONSE_FORMATS:
        raise _bad(
            "response_format",
            fmt,
            'an object whose "type" is ' + ", ".join(sorted(_RESPONSE_FORMATS)),
        )
    return kind in ("json_object", "json_schema")


class RequestFacts(Frozen):
    """What the request policy reads of a request, validated and typed (the sidecar builds it
    from its own validated request, so the policy never sees the raw body)."""

    choice: ToolChoice
    tools: tuple[Mapping[str, Any], ...]  # OpenAI tool objects, each with a function name
    thinking: bool  # resolved (`thinking_for`)
    json_answer: bool  # response_format json_object / json_schema
    structural_tag: bool  # any structural-tag spelling
    asked: bool | None  # what the request itself said of thinking (None: nothing)

    def __init__(
        self,
        choice: ToolChoice,
        tools: tuple[Mapping[str, Any], ...],
        thinking: bool,
        json_answer: bool,
        structural_tag: bool,
        asked: bool | None = None,
    ) -> None:
        set_field(self, "choice", choice)
        set_field(self, "tools", tools)
        set_field(self, "thinking", thinking)
        set_field(self, "json_answer", json_answer)
        set_field(self, "structural_tag", structural_tag)
        set_field(self, "asked", asked)


def request_facts(settings: ParserSettings, request: Mapping[str, Any]) -> RequestFacts:
    """Validate a request mapping into `RequestFacts`; InvalidRequest means HTTP 400."""
    choice = parse_tool_choice(request)
    tools, _ = _declared_tools(request)
    asked = requested_thinking(settings, request)
    return RequestFacts(
        choice,
        tools,
        default_thinking(settings, asked),
        _json_answer(request),
        is_structural_tag(request),
        asked=asked,
    )


def plan_request(
    settings: ParserSettings,
    request: Mapping[str, Any] | RequestFacts,
    prompt: str | None = None,
) -> ParsePlan:
    """Validate `request` (a mapping, or facts already validated) and decide how its output
    is parsed; InvalidRequest means HTTP 400."""
    facts = request if isinstance(request, RequestFacts) else request_facts(settings, request)
    choice, tools, thinking, json_answer, asked = (
        facts.choice, facts.tools, facts.thinking, facts.json_answer, facts.asked
    )  # fmt: skip
    names = [str(tool["function"]["name"]) for tool in tools]
    _check_choice(choice, names)
    route = route_for(settings, choice, facts.structural_tag)

    reasoning_parser = settings.reasoning_parser
    # Output channels follow the configured parsers: reasoning text goes to reasoning_content
    # only with a reasoning parser; explicit reasoning markers are parsed whatever thinking
    # says (thinking decides only where the output starts).
    channel = reasoning_parser is not None
    if reasoning_parser is None and settings.tool_parser is not None:
        # a channel grammar still reads its reasoning channel (its markers are its grammar),
        # but without a reasoning parser that text is content
        reasoning_parser = _CHANNEL_REASONING.get(settings.tool_parser)
    reasoning = reasoning_parser is not None and thinking
    start = False
    if reasoning_parser is not None:
        state = prefill_state(reasoning_parser, prompt) if prompt is not None else None
        if state == "open":
            # The prompt is what the model saw: it is inside a reasoning block whatever the
            # request's controls said (a template that ignored them).
            reasoning, start = True, True
        elif state == "closed":
            reasoning = reasoning and reasoning_parser not in _CLOSER_MEANS_OFF
        else:
            start = thinking and (
                reasoning_parser in _FORCED_START
                or (
                    prompt is None
                    and (
                        reasoning_parser in _PREFILLED_WITHOUT_PROMPT
                        or (asked is True and reasoning_parser in _PREFILLED_WHEN_ASKED)
                    )
                )
            )

    # Without a tool parser only a forced choice is parsed (its guided JSON, by the jail).
    parse_tools = settings.tool_parser is not None or choice.forced
    if route.kind == "pass_through" or (json_answer and not choice.forced):
        parse_tools = False
    return ParsePlan(
        route=route.kind,
        family=settings.family,
        tool_parser=settings.tool_parser,
        reasoning_parser=reasoning_parser,
        tool_mode=choice.mode,
        named_tool=choice.name,
        parse_tools=parse_tools,
        reasoning=reasoning,
        start_in_reasoning=start,
        reasoning_channel=channel,
        tools=tools,
    )


def settings_for(
    tool_parser: str | None, reasoning_parser: str | None, generation: int | None
) -> ParserSettings:
    """Settings for a direct library call (`parsers.parse`): no environment is read.

    `generation` None means the family defaults (as `DYN_PARSER_VERSION` unset/auto).
    """
    version: Version
    if generation is None:
        version = "auto"
    elif generation == 1 and not isinstance(generation, bool):
        version = "1"
    elif generation == 2 and not isinstance(generation, bool):
        version = "2"
    else:
        raise ConfigError(f"generation={generation!r} is not accepted; use None (auto), 1 or 2")
    tool, reasoning, family = resolve_pair(
        tool_parser, reasoning_parser, tool_flag="tool_parser", reasoning_flag="reasoning_parser"
    )
    check_generation(family, version, "generation", "None (family defaults)")
    return ParserSettings(
        version=version,
        tool_parser=tool,
        reasoning_parser=reasoning,
        family=family.key if family else None,
        version_source="library",
    )
