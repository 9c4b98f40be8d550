"""The selection rules end to end through the public library API (`parsers.parse`,
`parsers.StreamParser`): `generation=None` follows the family defaults, the reported route is the
one that really ran (V2 streams a call's arguments before the call ends, V1 does not), and the
prompt's prefill changes where parsing starts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from parsers import InvalidRequest, StreamParser, parse

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
CODER_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n"
    "</function>\n</tool_call>"
)
HERMES_CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
)
GUIDED_REQUIRED = '[{"name": "get_weather", "arguments": {"location": "Paris"}}]'


def _name_before_call_end(text: str, end: str, **kwargs: Any) -> tuple[bool, str]:
    """Whether the call's name was streamed before `end` arrived, and the route reported."""
    parser = StreamParser(**kwargs)
    cut = text.index(end)
    early = parser.feed(text[:cut])
    late = parser.feed(text[cut:]) + parser.finish()
    named_early = any(d.name for delta in early for d in delta.tool_calls)
    assert any(d.name == "get_weather" for delta in early + late for d in delta.tool_calls)
    return named_early, parse(text, **kwargs).route


@pytest.mark.parametrize(
    ("kwargs", "route", "streams_early"),
    [
        # Qwen3-Coder, tool_choice unset/auto, nothing set: V2 by default.
        ({"tool_parser": "qwen3_coder"}, "parser_v2", True),
        (
            {"tool_parser": "qwen3_coder", "tool_choice": "auto", "tools": [WEATHER]},
            "parser_v2",
            True,
        ),
        ({"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"}, "parser_v2", True),
        # ...the same deployment under explicit 1 is the jail: the call comes out whole at the end.
        ({"tool_parser": "qwen3_coder", "generation": 1}, "legacy_jail", False),
        ({"tool_parser": "qwen3_coder", "generation": 2}, "parser_v2", True),
    ],
)
def test_qwen3_coder_default_route_is_really_v2(
    kwargs: dict[str, Any], route: str, streams_early: bool
) -> None:
    assert _name_before_call_end(CODER_CALL, "</function>", **kwargs) == (streams_early, route)


@pytest.mark.parametrize(
    ("generation", "route", "streams_early"),
    [(None, "legacy_jail", False), (1, "legacy_jail", False), (2, "parser_v2", True)],
)
def test_hermes_defaults_to_the_jail(
    generation: int | None, route: str, streams_early: bool
) -> None:
    kwargs = {"tool_parser": "hermes", "reasoning_parser": "qwen3", "generation": generation}
    assert _name_before_call_end(HERMES_CALL, "}}", **kwargs) == (streams_early, route)


def test_forced_choice_under_defaults_is_the_jail_and_parses_guided_json() -> None:
    for tool_parser in ("qwen3_coder", None):
        message = parse(
            GUIDED_REQUIRED, tool_parser=tool_parser, tools=[WEATHER], tool_choice="required"
        )
        assert message.route == "legacy_jail"
        calls = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
        assert calls == [("get_weather", {"location": "Paris"})]
        assert message.finish_reason == "tool_calls"


def test_forced_choice_without_tool_parser_under_v2_is_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="DYN_PARSER_VERSION=2"):
        parse(GUIDED_REQUIRED, tools=[WEATHER], tool_choice="required", generation=2)


def test_no_parser_is_pass_through() -> None:
    message = parse(HERMES_CALL, tools=[WEATHER])
    assert (message.route, message.content, message.tool_calls) == ("pass_through", HERMES_CALL, [])


def test_v2_only_families_default_to_v2() -> None:
    text = "Plain answer."
    assert parse(text, tool_parser="muse", reasoning_parser="muse").route == "parser_v2"
    assert parse(text, reasoning_parser="deepseek_v41").route == "parser_v2"


@pytest.mark.parametrize(
    ("prompt", "reasoning", "content"),
    [
        ("user: hi\nassistant:<think>\n", "thought", "answer"),
        # no prefill: the answer; the unpaired `</think>` is markup, never content
        ("system: write <think> first\nassistant:", None, "thoughtanswer"),
    ],
)
def test_prefill_decides_where_qwen3_starts(
    prompt: str, reasoning: str | None, content: str
) -> None:
    message = parse(
        "thought</think>answer", tool_parser="hermes", reasoning_parser="qwen3", prompt=prompt
    )
    assert (message.reasoning_content, message.content) == (reasoning, content)


def test_kimi_k3_spaced_prefill_starts_in_reasoning() -> None:
    output = (
        "use the calculator<|close|>think<|sep|><|open|>response<|sep|>I will.<|close|>response"
        "<|sep|><|close|>message<|sep|><|end_of_msg|>"
    )
    prompt = "<|open|>user<|sep|>hi<|close|>user<|sep|><|open|> think  <|sep|>\n"
    message = parse(output, tool_parser="kimi_k3", reasoning_parser="kimi_k3", prompt=prompt)
    assert (message.reasoning_content, message.content) == ("use the calculator", "I will.")


def test_deepseek_v41_closed_prefill_means_no_reasoning() -> None:
    kwargs: dict[str, Any] = {"tool_parser": "deepseek_v41", "reasoning_parser": "deepseek_v41"}
    off = parse("Plain answer.", prompt="<｜User｜>hi<｜Assistant｜></think>", **kwargs)
    on = parse(
        "thought</think>Plain answer.", prompt="<｜User｜>hi<｜Assistant｜><think>", **kwargs
    )
    assert (off.reasoning_content, off.content) == (None, "Plain answer.")
    assert (on.reasoning_content, on.content) == ("thought", "Plain answer.")
