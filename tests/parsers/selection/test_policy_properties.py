"""Property tests: any JSON request body gets a plan or an InvalidRequest, never another error,
and the decision is a pure function of (settings, request, prompt)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import ConfigError, InvalidRequest, ParserSettings, load_settings, select_route
from parsers.plan import ParsePlan
from parsers.policy import plan_request

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
names = st.sampled_from(["get_weather", "get_time", "", "x"])
tool = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("function"), "function": st.fixed_dictionaries({"name": names})}
    ),
    json_values,
)
tool_choice = st.one_of(
    st.sampled_from(["none", "auto", "required", "any", None]),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["function", "custom"]),
            "function": st.fixed_dictionaries({"name": names}),
        }
    ),
    json_values,
)
request_bodies = st.fixed_dictionaries(
    {},
    optional={
        "tools": st.one_of(st.lists(tool, max_size=3), json_values),
        "tool_choice": tool_choice,
        "reasoning_effort": st.one_of(
            st.sampled_from(["none", "low", "medium", "high", "max", "xhigh"]),
            st.integers(-1, 101),
            json_values,
        ),
        "thinking": st.one_of(
            st.booleans(),
            st.fixed_dictionaries({"type": st.sampled_from(["enabled", "disabled", "x"])}),
            json_values,
        ),
        "chat_template_kwargs": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "enable_thinking": st.one_of(st.booleans(), json_values),
                    "thinking": st.one_of(st.booleans(), json_values),
                    "thinking_mode": st.one_of(st.sampled_from(["chat", "thinking"]), json_values),
                },
            ),
            json_values,
        ),
        "response_format": st.one_of(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        ["text", "json_object", "json_schema", "structural_tag", "xml"]
                    )
                }
            ),
            json_values,
        ),
        "structured_outputs": json_values,
        "structural_tag": json_values,
    },
)
deployments = st.sampled_from(
    [
        (None, None),
        ("hermes", "qwen3"),
        ("qwen3_coder", None),
        (None, "qwen3"),
        ("deepseek_v41", "deepseek_v41"),
        (None, "muse"),
        ("kimi_k3", None),
        ("gemma4", "gemma4"),
    ]
)
versions = st.sampled_from(
    [{}, {"DYN_PARSER_VERSION": "auto"}, {"DYN_PARSER_VERSION": "1"}, {"DYN_PARSER_VERSION": "2"}]
)
prompts = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.sampled_from(["<think>\n", "a</think>", "<|open|> think <|sep|>"]),
)


def _settings(
    deployment: tuple[str | None, str | None], environ: dict[str, str]
) -> ParserSettings | None:
    try:
        return load_settings(environ, tool_parser=deployment[0], reasoning_parser=deployment[1])
    except ConfigError:  # only V1 with a V2-only family; covered by the startup tests
        assert environ.get("DYN_PARSER_VERSION") == "1"
        return None


@settings(max_examples=400, deadline=None)
@given(deployments, versions, request_bodies, prompts)
def test_any_request_gets_a_plan_or_invalid_request(
    deployment: tuple[str | None, str | None],
    environ: dict[str, str],
    body: dict[str, Any],
    prompt: str | None,
) -> None:
    parser_settings = _settings(deployment, environ)
    if parser_settings is None:
        return
    before = copy.deepcopy(body)
    try:
        plan = plan_request(parser_settings, body, prompt)
    except InvalidRequest as err:
        assert err.param  # every 400 names the field for the OpenAI error envelope
        return
    finally:
        assert body == before  # the request is not modified
    assert isinstance(plan, ParsePlan)
    assert plan == plan_request(parser_settings, copy.deepcopy(body), prompt)  # deterministic
    assert plan.route == select_route(parser_settings, body).kind
    assert not plan.start_in_reasoning or plan.reasoning
    if plan.route == "pass_through":
        assert not plan.parse_tools
