"""Request policy (docs/parser-selection.md): settings + request + rendered prompt -> ParsePlan.

Everything here is a pure function of its arguments. A request is read once into
`RequestFacts` (`request_facts` from a mapping, `facts_for` from values a caller already
typed): every request mistake the parsers can see raises `InvalidRequest` (HTTP 400) there,
with `param` naming the offending field, before any parsing starts; the route itself comes
from `parsers.routing.route_for`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from parsers.errors import ConfigError, InvalidRequest
from parsers.family import OPENAI_EFFORTS
from parsers.plan import ParsePlan
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS, Family
from parsers.routing import Route, ToolChoice, is_structural_tag, parse_tool_choice, route_for
from parsers.settings import ParserSettings, Version, check_generation, family_by_key, resolve_pair

ResponseFormatType = Literal["text", "json_object", "json_schema", "structural_tag"]
RESPONSE_FORMATS: tuple[ResponseFormatType, ...] = get_args(ResponseFormatType)
JSON_ANSWERS: frozenset[str] = frozenset({"json_object", "json_schema"})
# A valid `reasoning_effort`: one of the family's names (`Family.efforts`), or an integer in
# its range (`Family.effort_range`). DeepSeek V4.1 renders it into the prompt (parsers.md);
# the other families' templates ignore it, so they accept the OpenAI values and only "none"
# has an effect there (thinking off).
Effort = str | int
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


def _thinking_field(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind == "enabled":
            return True
        if kind == "disabled":
            return False
    raise _bad("thinking", value, 'true, false, {"type": "enabled"} or {"type": "disabled"}')


def _effort(value: object, family: Family | None) -> Effort | None:
    if value is None:
        return None
    efforts = family.efforts if family is not None else OPENAI_EFFORTS
    span = family.effort_range if family is not None else None
    if span is not None and isinstance(value, int) and not isinstance(value, bool):
        if span[0] <= value <= span[1]:
            return value
    elif isinstance(value, str) and value in efforts:
        return value
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


def _declared_tools(request: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    tools = request.get("tools")
    if tools is None:
        return ()
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise _bad("tools", tools, "an array of tool objects")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InvalidRequest(
                f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                param=f"tools[{i}].function.name",
            )
    return tuple(tools)


def _check_choice(choice: ToolChoice, tools: tuple[Mapping[str, Any], ...]) -> None:
    names = [str(tool["function"]["name"]) for tool in tools]
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


def _response_format(request: Mapping[str, Any]) -> ResponseFormatType | None:
    fmt = request.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if not isinstance(kind, str) or kind not in RESPONSE_FORMATS:
        raise _bad(
            "response_format",
            fmt,
            'an object whose "type" is ' + ", ".join(sorted(RESPONSE_FORMATS)),
        )
    return kind


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What the parsers read of one request, validated and typed for one deployment
    (`request_facts`): the tool choice (checked against the tools), the thinking controls and
    their answer, the kind of answer asked for, and the route serving it."""

    choice: ToolChoice
    tools: tuple[Mapping[str, Any], ...]  # OpenAI tool objects, each with a function name
    thinking: bool  # thinking on or off, by the precedence of docs/parser-selection.md
    asked: bool | None  # what the request's own controls said of thinking (None: nothing)
    thinking_field: bool | None  # the request's `thinking` field (None: absent)
    effort: Effort | None  # `reasoning_effort`, one of the family's values
    json_answer: bool  # response_format json_object / json_schema
    structural_tag: bool  # any structural-tag spelling
    route: Route


def facts_for(
    settings: ParserSettings,
    choice: ToolChoice,
    tools: tuple[Mapping[str, Any], ...],
    *,
    thinking: object = None,
    reasoning_effort: object = None,
    template_kwargs: object = None,
    response_format: ResponseFormatType | None = None,
    structural_tag: bool = False,
) -> RequestFacts:
    """The facts of a request whose tool choice, tools (each with a function name) and answer
    format are already typed; the thinking controls are the body's values, checked here.

    Every thinking control is validated even when a higher one already decides, so a bad
    value is a 400 whatever else the request says; then the choice is checked against the
    tools, then the route is decided. InvalidRequest means HTTP 400.
    """
    family = family_by_key(settings.family)
    field = _thinking_field(thinking)
    effort = _effort(reasoning_effort, family)
    decisions = (
        field,
        None if effort is None else effort != "none",
        _template_thinking(template_kwargs),
    )
    asked = next((d for d in decisions if d is not None), None)
    if asked is not None:
        resolved = asked
    elif settings.thinking_default is not None:
        resolved = settings.thinking_default
    else:
        resolved = family.reasoning_default_on if family is not None else True
    _check_choice(choice, tools)
    return RequestFacts(
        choice,
        tools,
        resolved,
        asked,
        field,
        effort,
        json_answer=response_format in JSON_ANSWERS,
        structural_tag=structural_tag,
        route=route_for(settings, choice, structural_tag),
    )


def request_facts(settings: ParserSettings, request: Mapping[str, Any]) -> RequestFacts:
    """Validate a request mapping (the library's keyword arguments, an OpenAI body) into
    `RequestFacts`; InvalidRequest means HTTP 400."""
    return facts_for(
        settings,
        parse_tool_choice(request.get("tool_choice")),
        _declared_tools(request),
        thinking=request.get("thinking"),
        reasoning_effort=request.get("reasoning_effort"),
        template_kwargs=request.get("chat_template_kwargs"),
        response_format=_response_format(request),
        structural_tag=is_structural_tag(request),
    )


def plan_request(
    settings: ParserSettings,
    request: Mapping[str, Any] | RequestFacts,
    prompt: str | None = None,
) -> ParsePlan:
    """Decide how the output of `request` (a mapping, validated here: InvalidRequest means
    HTTP 400; or its `RequestFacts`) is parsed."""
    facts = request if isinstance(request, RequestFacts) else request_facts(settings, request)
    choice, tools, thinking, json_answer, asked, route = (
        facts.choice, facts.tools, facts.thinking, facts.json_answer, facts.asked, facts.route
    )  # fmt: skip

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
