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
from parsers.family import OPENAI_EFFORTS
from parsers.plan import ParsePlan
from parsers.record import Frozen, set_field
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS, Family
from parsers.routing import ToolChoice, is_structural_tag, parse_tool_choice, route_for
from parsers.settings import ParserSettings, Version, check_generation, family_by_key, resolve_pair

# reasoning_effort accepted per family (`Family.efforts`): DeepSeek V4.1 renders it into the
# prompt (parsers.md); the other families' templates ignore it, so they accept the OpenAI values
# and only "none" has an effect there (thinking off).
_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema", "structural_tag"})
_THINKING_MODES = {"thinking": True, "chat": False}
_TAIL = 512  # characters of the prompt's end searched for a prefilled marker

# Every family fact used below (prefill patterns, forced start, effort values, channel
# reasoning) is the family's own declaration (`parsers.family.Family`), found through the
# canonical reasoning or tool parser name.


def _reasoning_family(reasoning_parser: str) -> Family | None:
    found = REASONING_PARSERS.get(reasoning_parser)
    return found.family if found is not None else None


def prefill_state(reasoning_parser: str, prompt: str) -> Literal["open", "closed"] | None:
    """'open' when the prompt ends inside reasoning, 'closed' after a closed block, else None."""
    family = _reasoning_family(reasoning_parser)
    markers = family.prefill_patterns() if family is not None else None
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


def _effort_thinking(value: object, family_key: str | None) -> bool | None:
    if value is None:
        return None
    family = family_by_key(family_key)
    efforts = family.efforts if family is not None else OPENAI_EFFORTS
    span = family.effort_range if family is not None else None
    if span is not None and isinstance(value, int) and not isinstance(value, bool):
        if span[0] <= value <= span[1]:
            return True
    elif isinstance(value, str) and value in efforts:
        return value != "none"
    accepted = ", ".join(f'"{e}"' for e in efforts)
    if span is not None:
        accepted += f" or an integer {span[0]}-{span[1]}"
    raise _bad("reasoning_effort", value, accepted)


def _template_thinking(kwargs: object) -> bool | None:
    if kwargs is None:
        return None
    if not isinstance(kwargs, Mapping):
        raise _bad("chat_template_kwargs", kwargs, "an object")
    # Every control present is checked (a bad one is a 400 even when an earlier one decides).
    decided: bool | None = None
    for key in ("enable_thinking", "thinking"):
        value = kwargs.get(key)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise _bad(f"chat_template_kwargs.{key}", value, "true or false")
        if decided is None:
            decided = value
    mode = kwargs.get("thinking_mode")
    if mode is not None:
        if not (isinstance(mode, str) and mode in _THINKING_MODES):
            raise _bad("chat_template_kwargs.thinking_mode", mode, '"thinking" or "chat"')
        if decided is None:
            decided = _THINKING_MODES[mode]
    return decided


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
        tool = TOOL_PARSERS.get(settings.tool_parser)
        if tool is not None and tool.family.channel_reasoning:
            reasoning_parser = tool.family.reasoning_parser
    reasoning = reasoning_parser is not None and thinking
    start = False
    if reasoning_parser is not None:
        state = prefill_state(reasoning_parser, prompt) if prompt is not None else None
        if state == "open":
            # The prompt is what the model saw: it is inside a reasoning block whatever the
            # request's controls said (a template that ignored them).
            reasoning, start = True, True
        elif (family := _reasoning_family(reasoning_parser)) is None:
            pass  # no facts: no prefill or start rule applies
        elif state == "closed":
            reasoning = reasoning and not family.closer_means_off
        else:
            start = thinking and (
                family.forced_start
                or (
                    prompt is None
                    and (
                        family.prefilled_without_prompt
                        or (asked is True and family.prefilled_when_asked)
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
    # exactly the integers 1 and 2: `2.0`, `True` (== 1) or a string are refused, not coerced
    if generation is None:
        version = "auto"
    elif type(generation) is int and generation == 1:
        version = "1"
    elif type(generation) is int and generation == 2:
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
