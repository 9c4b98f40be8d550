"""Qwen3-Coder XML-style calls (`qwen3_coder`), both generations."""

from __future__ import annotations

import pytest
from parser_check import calls, run, tool

from parsers import StreamParser, parse

C = {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"}
GENS = pytest.mark.parametrize("gen", [1, 2])
WEATHER = tool("get_current_weather", city="string", state="string", unit="string")
AREA = tool("calculate_area", shape="string", dimensions="object", precision="integer")


def fn(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


def wrapped(name: str, **params: str) -> str:
    return f"<tool_call>\n{fn(name, **params)}\n</tool_call>"


@GENS
def test_spec_example(gen: int) -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nSan Francisco\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, **C)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"San Francisco"}')
    ]
    assert (msg.content, msg.finish_reason) == (None, "tool_calls")


@GENS
def test_parallel_calls_and_content_before(gen: int) -> None:
    text = (
        "Sure! Let me check the weather for you."
        + wrapped("get_current_weather", city="Dallas", state="TX", unit="fahrenheit")
        + "\n"
        + wrapped("get_current_weather", city="Orlando", state="FL", unit="fahrenheit")
    )
    msg = run(text, gen, tools=[WEATHER], **C)
    assert msg.content == "Sure! Let me check the weather for you."
    assert calls(msg) == [
        ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}),
        ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}),
    ]


@GENS
def test_multiline_json_parameter_and_integer(gen: int) -> None:
    text = wrapped(
        "calculate_area",
        shape="rectangle",
        dimensions='{"width": 10, \n "height": 20}',
        precision="2",
    )
    assert calls(run(text, gen, tools=[AREA], **C)) == [
        (
            "calculate_area",
            {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2},
        )
    ]


@GENS
@pytest.mark.parametrize(
    ("written", "value"),
    [("1e-3", 0.001), ("-0.5", -0.5), ("2.50", 2.5), ("42", 42), ("3.14", 3.14), ("-7", -7)],
)
def test_number_typing_keeps_the_value(gen: int, written: str, value: float) -> None:
    msg = run(wrapped("m", x=written), gen, tools=[tool("m", x="number")], **C)
    assert calls(msg) == [("m", {"x": value})]


@GENS
def test_schema_typing_of_every_kind(gen: int) -> None:
    t = tool(
        "t",
        i="integer",
        f="float",
        b="boolean",
        b2="boolean",
        s="string",
        o="object",
        a="array",
        lit="array",
        n="integer",
        bad="integer",
        e={"type": "string", "enum": ["x", "y"]},
    )
    text = wrapped(
        "t",
        i="42",
        f="3.14",
        b="TRUE",
        b2="false",
        s="hello world",
        o='{"key": "value"}',
        a="[1, 2]",
        lit="['a', True]",
        n="null",
        bad="12abc",
        e="x",
        extra="7",
    )
    ((_name, args),) = calls(run(text, gen, tools=[t], **C))
    assert args == {
        "i": 42,
        "f": 3.14,
        "b": True,
        "b2": False,
        "s": "hello world",
        "o": {"key": "value"},
        "a": [1, 2],
        "lit": ["a", True],
        "n": None,
        "bad": "12abc",
        "e": "x",
        "extra": "7",  # not in the schema: stays a string
    }


@GENS
def test_without_schema_values_stay_strings(gen: int) -> None:
    msg = run(wrapped("free", n="42", b="true", o='{"a": 1}'), gen, **C)
    assert calls(msg) == [("free", {"n": "42", "b": "true", "o": '{"a": 1}'})]


@GENS
def test_one_surrounding_newline_trimmed_entities_kept(gen: int) -> None:
    text = (
        "<tool_call>\n<function=w>\n<parameter=body>\n\n  line 1\nline 2 &amp; &lt;3&gt;\n\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    assert calls(run(text, gen, **C)) == [("w", {"body": "\n  line 1\nline 2 &amp; &lt;3&gt;\n"})]


@GENS
def test_bare_function_without_tool_call(gen: int) -> None:
    text = "Text before " + fn("get_current_weather", city="Dallas", state="TX") + " after"
    msg = run(text, gen, tools=[WEATHER], **C)
    assert msg.content == "Text before after"
    assert calls(msg) == [("get_current_weather", {"city": "Dallas", "state": "TX"})]


@GENS
def test_missing_parameter_close_tags(gen: int) -> None:
    text = (
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n<parameter=b>\n2\n</function>\n</tool_call>"
    )
    assert calls(run(text, gen, **C)) == [("f", {"a": "1", "b": "2"})]


@GENS
def test_two_functions_in_one_wrapper_and_no_arguments(gen: int) -> None:
    text = "<tool_call>\n" + fn("a", x="1") + "\n" + fn("ping") + "\n</tool_call>"
    assert calls(run(text, gen, **C)) == [("a", {"x": "1"}), ("ping", {})]


@GENS
def test_hermes_json_inside_tool_call_is_read(gen: int) -> None:
    text = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
    assert calls(run(text, gen, **C)) == [("f", {"a": 1})]


@GENS
def test_reasoning_then_call_and_non_ascii(gen: int) -> None:
    text = "<think>用户想要天气</think>\n\n好的。\n" + wrapped("w", city="北京")
    msg = run(text, gen, **C)
    assert (msg.reasoning_content, msg.content, calls(msg)) == (
        "用户想要天气",
        "\n\n好的。",
        [("w", {"city": "北京"})],
    )
    assert '"北京"' in msg.tool_calls[0].arguments


@GENS
def test_call_marker_ends_unclosed_reasoning(gen: int) -> None:
    msg = run("<think>need a tool\n" + wrapped("w", q="x"), gen, **C)
    assert (msg.reasoning_content, calls(msg)) == ("need a tool", [("w", {"q": "x"})])


@GENS
def test_malformed_is_content_verbatim(gen: int) -> None:
    text = "<tool_call>\nnot a function\n</tool_call> then " + wrapped("ok", a="1")
    msg = run(text, gen, **C)
    assert msg.content == "<tool_call>\nnot a function\n</tool_call> then"
    assert calls(msg) == [("ok", {"a": "1"})]


def test_unterminated_call_v1_content_v2_closed() -> None:
    text = "<tool_call>\n<function=f>\n<parameter=a>\nabc"
    v1 = run(text, 1, **C)
    assert (v1.content, v1.tool_calls) == (text, [])
    v2 = run(text, 2, **C)
    # never repaired: the arguments as streamed
    assert (v2.content, [(c.name, c.arguments) for c in v2.tool_calls]) == (
        None,
        [("f", '{"a":"abc')],
    )


@GENS
def test_unterminated_header_is_content(gen: int) -> None:
    text = "Calling <tool_call>\n<function=get_wea"
    msg = run(text, gen, **C)
    assert (msg.content, msg.tool_calls) == (text, [])


def test_v2_streams_string_values_but_holds_typed_ones() -> None:
    p = StreamParser(generation=2, tools=[tool("f", n="number", s="string")], **C)
    text = wrapped("f", s="a long string value", n="2.50")
    seen: list[str] = []
    final = ""
    for ch in text:
        for d in p.feed(ch):
            for c in d.tool_calls:
                if c.arguments:
                    seen.append(c.arguments)
                    final += c.arguments
    for d in p.finish():
        for c in d.tool_calls:
            final += c.arguments or ""
    assert final == '{"s":"a long string value","n":2.5}'
    assert len([s for s in seen if "string" in s or len(s) == 1]) > 3
    # the number went out whole, never as a prefix like "2" or "2."
    assert not any(s.endswith((":2", ":2.")) for s in seen)


def test_aliases_resolve() -> None:
    msg = parse(wrapped("f"), tool_parser="Qwen3-Coder", generation=2)
    assert calls(msg) == [("f", {})]
