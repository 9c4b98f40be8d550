"""The public API shape: parse / StreamParser / stream, routes, errors, delta structure."""

from __future__ import annotations

import pytest
from parser_check import calls, tool

from parsers import ConfigError, InvalidRequest, StreamParser, load_settings, parse, stream

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


@pytest.mark.parametrize("generation", [2.0, 1.0, True, False, "2", 3, 0, 2 + 0j])
def test_a_generation_that_is_not_the_integer_1_or_2_is_refused(generation: object) -> None:
    # 2.0 == 2 and True == 1 in Python: accepted before, silently coerced
    for call in (
        lambda: parse("x", tool_parser="hermes", generation=generation),  # type: ignore[arg-type]
        lambda: StreamParser(tool_parser="hermes", generation=generation),  # type: ignore[arg-type]
        lambda: stream(["x"], tool_parser="hermes", generation=generation),
    ):
        with pytest.raises(ConfigError) as info:
            call()
        assert f"generation={generation!r} is not accepted" in str(info.value)


@pytest.mark.parametrize("name", [5, b"hermes", None.__class__])
def test_a_parser_name_that_is_not_text_is_a_config_error(name: object) -> None:
    with pytest.raises(ConfigError, match="tool_parser must be a name") as info:
        parse("x", tool_parser=name)  # type: ignore[arg-type]
    assert repr(name) in str(info.value)
    with pytest.raises(ConfigError, match="--reasoning-parser must be a name"):
        load_settings({}, reasoning_parser=name)  # type: ignore[arg-type]


@pytest.mark.parametrize("var", ["DYN_PARSER_VERSION", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"])
@pytest.mark.parametrize("value", ["\ud800", "2\udfff", "tr\udbffue", "\udcff", "2\udc80"])
def test_a_variable_holding_a_lone_surrogate_is_a_config_error(var: str, value: str) -> None:
    # os.environ gives undecodable bytes as \udc80-\udcff (shown as the bytes); a mapping
    # passed in may hold any lone surrogate (shown as its escape)
    with pytest.raises(ConfigError) as info:
        load_settings({var: value})
    message = str(info.value)
    assert message.startswith(f"{var}=") and "is not valid UTF-8" in message
    message.encode("utf-8")  # the message itself is printable
    shown = message[len(var) + 1 : message.index(" is not")]
    escapable = all(0xDC80 <= ord(c) <= 0xDCFF for c in value if 0xD800 <= ord(c) <= 0xDFFF)
    assert shown == (repr(value.encode("utf-8", "surrogateescape")) if escapable else ascii(value))


def test_both_bad_variables_are_reported_together() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({"DYN_PARSER_VERSION": "\ud800", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": b"1"})  # type: ignore[dict-item]
    message = str(info.value)
    assert "DYN_PARSER_VERSION='\\ud800' is not valid UTF-8" in message
    assert "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2=b'1' is not text" in message


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
    """`feed` is bound per instance to the runner's chunk function (no call layer per chunk):
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
