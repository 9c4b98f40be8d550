"""Request policy (parser-selection.md): tool_choice modes, 400 validations, response_format and
the thinking controls' precedence, as seen in the ParsePlan."""

from __future__ import annotations

from typing import Any

import pytest

from parsers import InvalidRequest, load_settings
from parsers.plan import ParsePlan
from parsers.policy import plan_request, request_facts

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
TIME = {"type": "function", "function": {"name": "get_time"}}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def _plan(
    request: dict[str, Any],
    *,
    tool: str | None = "hermes",
    reasoning: str | None = "qwen3",
    version: str | None = None,
    prompt: str | None = None,
    thinking_default: bool | None = None,
) -> ParsePlan:
    environ = {} if version is None else {"DYN_PARSER_VERSION": version}
    settings = load_settings(
        environ, tool_parser=tool, reasoning_parser=reasoning, thinking_default=thinking_default
    )
    return plan_request(settings, {"messages": [], **request}, prompt)


# ---- tool_choice modes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "mode", "name"),
    [
        (None, "auto", None),
        ("auto", "auto", None),
        ("none", "none", None),
        ("required", "required", None),
        (NAMED, "named", "get_weather"),
        ({"function": {"name": "get_time"}}, "named", "get_time"),  # `type` may be omitted
    ],
)
def test_tool_choice_modes(choice: object, mode: str, name: str | None) -> None:
    request: dict[str, Any] = {"tools": [WEATHER, TIME]}
    if choice is not None:
        request["tool_choice"] = choice
    plan = _plan(request)
    assert (plan.tool_mode, plan.named_tool) == (mode, name)
    assert plan.parse_tools is True
    assert plan.tools == (WEATHER, TIME)  # all declared tools, for schema typing


def test_forced_choice_without_a_tool_parser_is_jailed_guided_json() -> None:
    # Documented choice: under unset/1 the jail parses the guided-JSON answer on its own.
    for version in (None, "auto", "1"):
        plan = _plan(
            {"tools": [WEATHER], "tool_choice": "required"},
            tool=None,
            reasoning=None,
            version=version,
        )
        assert (plan.route, plan.tool_parser, plan.parse_tools) == ("legacy_jail", None, True)
        assert plan.tool_mode == "required"


def test_no_parser_and_unforced_is_pass_through_without_tool_parsing() -> None:
    for choice in (None, "none", "auto"):
        request: dict[str, Any] = {"tools": [WEATHER]}
        if choice:
            request["tool_choice"] = choice
        plan = _plan(request, tool=None, reasoning=None, version="2")
        assert (plan.route, plan.parse_tools, plan.reasoning) == ("pass_through", False, False)


# ---- 400s: InvalidRequest with the offending param, never another exception -------------


@pytest.mark.parametrize(
    ("request_body", "param", "words"),
    [
        ({"tool_choice": "required"}, "tool_choice", "at least one tool"),
        ({"tool_choice": "required", "tools": []}, "tool_choice", "at least one tool"),
        ({"tool_choice": "required", "tools": None}, "tool_choice", "at least one tool"),
        ({"tool_choice": NAMED}, "tool_choice", "'get_weather', which is not in 'tools'"),
        ({"tool_choice": NAMED, "tools": [TIME]}, "tool_choice", "declared: 'get_time'"),
        (
            {
                "tool_choice": {"type": "function", "function": {"name": "Get_Weather"}},
                "tools": [WEATHER],
            },
            "tool_choice",
            "not in 'tools'",
        ),
        ({"tool_choice": "any", "tools": [WEATHER]}, "tool_choice", "unsupported tool_choice"),
        ({"tool_choice": "REQUIRED", "tools": [WEATHER]}, "tool_choice", "unsupported"),
        ({"tool_choice": "", "tools": [WEATHER]}, "tool_choice", "unsupported"),
        ({"tool_choice": 1, "tools": [WEATHER]}, "tool_choice", "unsupported"),
        ({"tool_choice": True, "tools": [WEATHER]}, "tool_choice", "unsupported"),
        ({"tool_choice": ["get_weather"], "tools": [WEATHER]}, "tool_choice", "unsupported"),
        ({"tool_choice": {"type": "function"}, "tools": [WEATHER]}, "tool_choice", "unsupported"),
        (
            {"tool_choice": {"type": "function", "name": "get_weather"}, "tools": [WEATHER]},
            "tool_choice",
            "unsupported",
        ),
        (
            {"tool_choice": {"type": "custom", "custom": {"name": "x"}}, "tools": [WEATHER]},
            "tool_choice",
            "unsupported",
        ),
        (
            {"tool_choice": {"type": "function", "function": "get_weather"}, "tools": [WEATHER]},
            "tool_choice",
            "unsupported",
        ),
        (
            {"tool_choice": {"type": "function", "function": {"name": ""}}, "tools": [WEATHER]},
            "tool_choice",
            "unsupported",
        ),
        ({"tools": "get_weather"}, "tools", "array"),
        ({"tools": [{"type": "function"}]}, "tools[0].function.name", "tools[0]"),
        ({"tools": [WEATHER, {"function": {"name": 3}}]}, "tools[1].function.name", "tools[1]"),
        ({"reasoning_effort": "max"}, "reasoning_effort", "invalid reasoning_effort"),
        ({"reasoning_effort": "HIGH"}, "reasoning_effort", "invalid"),
        ({"reasoning_effort": 50}, "reasoning_effort", "invalid"),
        ({"reasoning_effort": ""}, "reasoning_effort", "invalid"),
        ({"thinking": "yes"}, "thinking", '{"type": "enabled"}'),
        ({"thinking": {"type": "on"}}, "thinking", "invalid thinking"),
        ({"thinking": 1}, "thinking", "invalid thinking"),
        ({"chat_template_kwargs": "x"}, "chat_template_kwargs", "an object"),
        (
            {"chat_template_kwargs": {"enable_thinking": "false"}},
            "chat_template_kwargs.enable_thinking",
            "true or false",
        ),
        ({"chat_template_kwargs": {"thinking": 0}}, "chat_template_kwargs.thinking", "true"),
        (
            {"chat_template_kwargs": {"thinking_mode": "fast"}},
            "chat_template_kwargs.thinking_mode",
            '"chat"',
        ),
        ({"response_format": {"type": "xml"}}, "response_format", "json_schema"),
        ({"response_format": "json_object"}, "response_format", "json_object"),
    ],
)
def test_request_errors_are_invalid_request(
    request_body: dict[str, Any], param: str, words: str
) -> None:
    with pytest.raises(InvalidRequest) as err:
        _plan(request_body)
    assert err.value.param == param
    assert words in str(err.value)


@pytest.mark.parametrize(
    "effort", ["medium", "minimal", "xhigh", "HIGH", 0, 101, -1, 50.0, "50", True, False, [], {}]
)
def test_deepseek_v41_rejects_other_efforts(effort: object) -> None:
    with pytest.raises(InvalidRequest) as err:
        _plan({"reasoning_effort": effort}, tool="deepseek_v41", reasoning="deepseek_v41")
    assert err.value.param == "reasoning_effort"
    assert '"low", "high", "max" or an integer 1-100' in str(err.value)


@pytest.mark.parametrize(
    ("effort", "reasoning"),
    [
        ("none", False),
        ("low", True),
        ("high", True),
        ("max", True),
        (1, True),
        (100, True),
        (57, True),
    ],
)
def test_deepseek_v41_efforts(effort: object, reasoning: bool) -> None:
    plan = _plan({"reasoning_effort": effort}, tool="deepseek_v41", reasoning="deepseek_v41")
    assert plan.reasoning is reasoning
    assert plan.route == "parser_v2"


@pytest.mark.parametrize(
    ("effort", "reasoning"),
    [
        ("none", False),
        ("minimal", True),
        ("low", True),
        ("medium", True),
        ("high", True),
        ("xhigh", True),
    ],
)
def test_other_families_accept_openai_efforts(effort: str, reasoning: bool) -> None:
    assert _plan({"reasoning_effort": effort}).reasoning is reasoning


def test_forced_choice_without_tool_parser_under_v2_is_400_naming_the_variable() -> None:
    for choice in ("required", NAMED):
        for reasoning in (None, "qwen3", "kimi_k3"):
            with pytest.raises(InvalidRequest, match="DYN_PARSER_VERSION=2") as err:
                _plan(
                    {"tools": [WEATHER], "tool_choice": choice},
                    tool=None,
                    reasoning=reasoning,
                    version="2",
                )
            assert err.value.param == "tool_choice"


def test_client_mistakes_are_reported_before_the_route_error() -> None:
    # Both wrong: no tools for "required", and nothing under V2 could serve it.
    with pytest.raises(InvalidRequest, match="at least one tool"):
        _plan({"tool_choice": "required"}, tool=None, reasoning=None, version="2")


# ---- response_format and structural tags ----------------------------------------------


@pytest.mark.parametrize("fmt", ["json_object", "json_schema"])
def test_json_response_format_with_auto_answers_in_content(fmt: str) -> None:
    body = {"response_format": {"type": fmt}, "tools": [WEATHER]}
    for choice in (None, "auto", "none"):
        request = dict(body, tool_choice=choice) if choice else body
        assert _plan(request).parse_tools is False
        assert _plan(request, tool="qwen3_coder").route == (
            "parser_v2" if choice != "none" else "legacy_jail"
        )
    # A forced choice still wants its call parsed.
    assert _plan(dict(body, tool_choice="required")).parse_tools is True
    assert _plan(dict(body, tool_choice=NAMED)).parse_tools is True


def test_text_response_format_keeps_tool_parsing() -> None:
    assert _plan({"response_format": {"type": "text"}, "tools": [WEATHER]}).parse_tools is True


@pytest.mark.parametrize(
    "structural",
    [
        {"response_format": {"type": "structural_tag", "structures": [], "triggers": []}},
        {"structured_outputs": {"structural_tag": '{"type": "structural_tag"}'}},
        {"structural_tag": '{"type": "structural_tag"}'},
    ],
)
def test_structural_tag_requests_stay_v1_under_defaults(structural: dict[str, Any]) -> None:
    request = {"tools": [WEATHER], **structural}
    assert _plan({"tools": [WEATHER]}, tool="qwen3_coder").route == "parser_v2"
    assert _plan(request, tool="qwen3_coder").route == "legacy_jail"
    assert _plan(request, tool="qwen3_coder", version="2").route == "parser_v2"
    assert _plan(request, tool="muse", reasoning="muse").route == "parser_v2"  # V2-only family
    assert _plan(request, tool=None, reasoning=None).route == "pass_through"


# ---- thinking controls, highest first -------------------------------------------------

ON, OFF = {"type": "enabled"}, {"type": "disabled"}


@pytest.mark.parametrize(
    ("reasoning_parser", "request_body", "deployment", "expected"),
    [
        # family defaults: Gemma 4 off, the others on
        ("gemma4", {}, None, False),
        ("qwen3", {}, None, True),
        ("kimi_k25", {}, None, True),
        ("muse", {}, None, True),
        # the deployment default beats the family default
        ("gemma4", {}, True, True),
        ("qwen3", {}, False, False),
        # chat_template_kwargs beat the deployment default, in key order
        ("qwen3", {"chat_template_kwargs": {"enable_thinking": True}}, False, True),
        ("gemma4", {"chat_template_kwargs": {"enable_thinking": True}}, None, True),
        ("qwen3", {"chat_template_kwargs": {"enable_thinking": False}}, True, False),
        ("deepseek_v4", {"chat_template_kwargs": {"thinking": False}}, None, False),
        ("deepseek_v4", {"chat_template_kwargs": {"thinking_mode": "chat"}}, None, False),
        ("gemma4", {"chat_template_kwargs": {"thinking_mode": "thinking"}}, None, True),
        (
            "qwen3",
            {"chat_template_kwargs": {"enable_thinking": True, "thinking": False}},
            None,
            True,
        ),
        (
            "qwen3",
            {"chat_template_kwargs": {"thinking": False, "thinking_mode": "thinking"}},
            None,
            False,
        ),
        ("qwen3", {"chat_template_kwargs": {"other": 1}}, False, False),
        # reasoning_effort beats chat_template_kwargs
        (
            "qwen3",
            {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}},
            None,
            False,
        ),
        (
            "gemma4",
            {"reasoning_effort": "low", "chat_template_kwargs": {"thinking": False}},
            None,
            True,
        ),
        ("deepseek_v41", {"reasoning_effort": "max"}, False, True),
        # the request's `thinking` beats everything
        ("qwen3", {"thinking": False, "reasoning_effort": "high"}, True, False),
        ("gemma4", {"thinking": True, "reasoning_effort": "none"}, False, True),
        ("kimi_k25", {"thinking": OFF, "chat_template_kwargs": {"thinking": True}}, None, False),
        ("gemma4", {"thinking": {"type": "enabled", "budget_tokens": 512}}, None, True),
        ("qwen3", {"thinking": None, "reasoning_effort": "none"}, None, False),  # null = unset
        ("qwen3", {"thinking": ON}, False, True),
    ],
)
def test_thinking_precedence(
    reasoning_parser: str, request_body: dict[str, Any], deployment: bool | None, expected: bool
) -> None:
    settings = load_settings({}, reasoning_parser=reasoning_parser, thinking_default=deployment)
    assert request_facts(settings, request_body).thinking is expected
    plan = plan_request(settings, request_body)
    assert plan.reasoning is expected
    if not expected:
        assert plan.start_in_reasoning is False


def test_lower_controls_are_validated_even_when_a_higher_one_decides() -> None:
    with pytest.raises(InvalidRequest) as err:
        _plan({"thinking": True, "reasoning_effort": "turbo"})
    assert err.value.param == "reasoning_effort"


def test_marker_families_need_the_reasoning_parser_named() -> None:
    # Kimi K2 without `kimi_k25`: a non-thinking model, never forced into reasoning.
    for tool in ("hermes", "kimi_k2", "deepseek_v4", "glm47"):
        plan = _plan({"thinking": True}, tool=tool, reasoning=None, prompt="<think>")
        assert (plan.reasoning, plan.start_in_reasoning, plan.reasoning_parser) == (
            False,
            False,
            None,
        )


@pytest.mark.parametrize("family", ["kimi_k3", "muse"])
def test_channel_families_parse_reasoning_with_the_tool_parser_alone(family: str) -> None:
    plan = _plan({}, tool=family, reasoning=None)
    assert (plan.reasoning, plan.reasoning_parser) == (True, family)
    assert _plan({"thinking": False}, tool=family, reasoning=None).reasoning is False
    # Kimi K3 without a prompt starts in its (normally prefilled) think channel.
    assert plan.start_in_reasoning is (family == "kimi_k3")


def test_rejection_messages_give_the_fix_that_applies() -> None:
    body = {"tools": [WEATHER], "tool_choice": "required"}
    # V2-only family with only a reasoning parser: no generation setting helps.
    with pytest.raises(InvalidRequest) as err:
        _plan(body, tool=None, reasoning="muse")
    assert "Muse is served by the unified parser only" in str(err.value)
    assert "DYN_PARSER_VERSION=1" not in str(err.value)
    # V2 selected through the deprecated alias: the message says so.
    settings = load_settings(
        {"DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": "on"}, tool_parser=None, reasoning_parser="qwen3"
    )
    with pytest.raises(InvalidRequest) as err:
        plan_request(settings, body)
    assert "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2=true (meaning DYN_PARSER_VERSION=2)" in str(
        err.value
    )
