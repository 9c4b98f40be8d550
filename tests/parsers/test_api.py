"""The public API shape: parse / StreamParser / stream, routes, errors, delta structure."""

from __future__ import annotations

import pytest
from parser_check import calls, tool

from parsers import ConfigError, InvalidRequest, StreamParser, parse, stream

CALL = '<tool_call>{"name": "f", "arguments": {"s": "abc"}}</tool_call>'


def test_pass_through_everything_is_content() -> None:
    text = "<think>x</think>" + CALL
    msg = parse(text)
    assert (msg.route, msg.content, msg.reasoning_content, msg.tool_calls) == (
        "pass_through",
        text,
        None,
        [],
    )
    assert msg.finish_reason == "stop"
    assert stream(list(text), finish_reason="length") == parse(text, finish_reason="length")


def test_generation_none_uses_family_defaults() -> None:
    assert parse(CALL, tool_parser="hermes").route == "legacy_jail"
    assert parse(CALL, tool_parser="qwen3_coder").route == "parser_v2"
    forced = parse("{}", tool_parser="qwen3_coder", tools=[tool("f")], tool_choice="required")
    assert forced.route == "legacy_jail"


def test_bad_generation_and_names_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="generation"):
        parse("x", tool_parser="hermes", generation=3)
    with pytest.raises(ConfigError, match="glm45"):
        parse("x", reasoning_parser="nope")


def test_request_mistakes_are_invalid_request() -> None:
    with pytest.raises(InvalidRequest):
        parse("x", tool_parser="hermes", tool_choice="required")  # no tools
    with pytest.raises(InvalidRequest):
        parse(
            "x",
            tool_parser="hermes",
            tools=[tool("a")],
            tool_choice={"type": "function", "function": {"name": "b"}},
        )


def test_request_fields_reach_the_policy() -> None:
    text = "<think>r</think>answer"
    on = parse(text, tool_parser="hermes", reasoning_parser="qwen3", generation=2)
    off = parse(
        text,
        tool_parser="hermes",
        reasoning_parser="qwen3",
        generation=2,
        request={"reasoning_effort": "none"},
    )
    assert (on.reasoning_content, on.content) == ("r", "answer")
    # thinking off changes where the output starts, not how explicit markers are read
    assert (off.reasoning_content, off.content) == ("r", "answer")
    assert off.route == "parser_v2"
    prefilled = parse(
        "r</think>answer", tool_parser="hermes", reasoning_parser="qwen3", generation=2,
        request={"chat_template_kwargs": {"enable_thinking": True}},
    )  # fmt: skip
    assert (prefilled.reasoning_content, prefilled.content) == ("r", "answer")


def test_stream_parser_lifecycle_and_delta_shape() -> None:
    p = StreamParser(tool_parser="hermes", generation=2)
    assert p.route == "parser_v2" and p.finish_reason is None
    deltas = [d for ch in "Hi " + CALL for d in p.feed(ch)]
    deltas += p.finish()
    assert p.finish_reason == "tool_calls"
    assert p.finish() == []  # finishing twice is harmless
    with pytest.raises(RuntimeError):
        p.feed("more")
    tc = [c for d in deltas for c in d.tool_calls]
    assert tc[0].id and tc[0].name == "f" and tc[0].index == 0
    assert all(c.id is None and c.name is None for c in tc[1:])
    assert "".join(c.arguments or "" for c in tc) == '{"s": "abc"}'
    assert "".join(d.content or "" for d in deltas) == "Hi"


def test_feed_takes_its_argument_by_name_and_refuses_after_finish() -> None:
    """`feed` is bound per instance to the engine's chunk function (no call layer per chunk):
    it still takes `chunk=` and raises after `finish`, in every route and machine kind."""
    for kw in (
        {"tool_parser": "hermes", "generation": 2},  # marker machine, fast paths
        {"tool_parser": "hermes", "generation": 1},
        {"tool_parser": "kimi_k3", "generation": 2},  # channel machine
        {},  # pass-through
    ):
        p = StreamParser(**kw)  # type: ignore[arg-type]
        got = p.feed(chunk="Hi there") + p.feed(chunk="") + p.finish()
        text = "".join((d.content or "") + (d.reasoning_content or "") for d in got)
        assert text == "Hi there", kw  # (Kimi K3 output starts in reasoning)
        with pytest.raises(RuntimeError, match="after finish"):
            p.feed(chunk="more")


def test_v1_deltas_carry_whole_calls() -> None:
    p = StreamParser(tool_parser="hermes", generation=1)
    deltas = [d for ch in CALL for d in p.feed(ch)] + p.finish()
    tc = [c for d in deltas for c in d.tool_calls]
    assert len(tc) == 1 and (tc[0].name, tc[0].arguments) == ("f", '{"s": "abc"}')


def test_empty_output() -> None:
    for gen in (1, 2):
        msg = parse("", tool_parser="hermes", reasoning_parser="qwen3", generation=gen)
        assert (msg.content, msg.reasoning_content, msg.tool_calls) == (None, None, [])


def test_forced_choice_without_tool_parser_uses_the_jail() -> None:
    msg = parse('[{"name": "f", "arguments": {"a": 1}}]', tools=[tool("f")], tool_choice="required")
    assert (msg.route, calls(msg)) == ("legacy_jail", [("f", {"a": 1})])


def test_response_format_json_answer_is_content() -> None:
    text = '{"name": "f", "arguments": {}}'
    msg = parse(
        CALL + text,
        tool_parser="hermes",
        generation=2,
        tools=[tool("f")],
        request={"response_format": {"type": "json_object"}},
    )
    assert (msg.content, msg.tool_calls) == (CALL + text, [])
