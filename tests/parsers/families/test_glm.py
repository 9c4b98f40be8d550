"""GLM 4.5 / 4.6 / 4.7 (`glm47`/`glm45`, reasoning `glm45`), both generations."""

from __future__ import annotations

import json

import pytest
from parser_check import calls, run, tool

from parsers import StreamParser, parse

G = {"tool_parser": "glm47", "reasoning_parser": "glm45"}
GENS = pytest.mark.parametrize("gen", [1, 2])


def call47(name: str, **args: str) -> str:
    body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in args.items())
    return f"<tool_call>{name}{body}</tool_call>"


def call45(name: str, **args: str) -> str:
    body = "".join(
        f"    <arg_key>{k}</arg_key>\n    <arg_value>{v}</arg_value>\n" for k, v in args.items()
    )
    return f"<tool_call>{name}\n{body}    </tool_call>"


@GENS
def test_spec_example(gen: int) -> None:
    text = (
        "I'll check the weather for you. <tool_call>get_weather<arg_key>location</arg_key>"
        "<arg_value>Paris</arg_value></tool_call>"
    )
    msg = run(text, gen, **G)
    assert msg.content == "I'll check the weather for you."
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"Paris"}')
    ]


@GENS
def test_glm45_newlines_and_indentation_between_tags(gen: int) -> None:
    text = (
        call45("get_current_weather", city="Dallas", state="TX")
        + "\n    "
        + call45("get_current_weather", city="Orlando", state="FL")
    )
    msg = run(text, gen, **G)
    assert msg.content is None
    assert calls(msg) == [
        ("get_current_weather", {"city": "Dallas", "state": "TX"}),
        ("get_current_weather", {"city": "Orlando", "state": "FL"}),
    ]


@GENS
def test_no_arguments(gen: int) -> None:
    for name, text in [
        ("get_time", "<tool_call>get_time</tool_call>"),
        ("get_current_time", "<tool_call>get_current_time\n</tool_call>"),
    ]:
        msg = run(text, gen, **G)
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [(name, "{}")]


@GENS
def test_values_json_first_then_schema_then_string(gen: int) -> None:
    t = tool("f", n="integer", x="number", b="boolean", s="string", a="array", z="null")
    text = call47(
        "f",
        n="5",
        x="-0.5",
        b="True",
        s="5",  # string-typed: stays "5"
        a="[1, 2]",
        z="null",
        j='{"k": [1, {"m": null}]}',
        q='"quoted"',
        bad="{not json",
        free="42",  # not in the schema: a string as written
        spaced="  keep  spaces ",
    )
    ((_, args),) = calls(run(text, gen, tools=[t], **G))
    assert args == {
        "n": 5,
        "x": -0.5,
        "b": True,
        "s": "5",
        "a": [1, 2],
        "z": None,
        "j": {"k": [1, {"m": None}]},
        "q": "quoted",
        "bad": "{not json",
        "free": "42",
        "spaced": "  keep  spaces ",
    }


@GENS
def test_without_schema_non_json_values_are_strings(gen: int) -> None:
    msg = run(call47("f", n="42", b="true", d="2025-08-01"), gen, **G)
    assert calls(msg) == [("f", {"n": "42", "b": "true", "d": "2025-08-01"})]


@GENS
def test_entities_kept_in_keys_and_values(gen: int) -> None:
    # the chat template writes values raw: an entity is the model's text
    msg = run(call47("f", **{"a&amp;b": "x &lt; y &amp;&amp; z"}), gen, **G)
    assert calls(msg) == [("f", {"a&amp;b": "x &lt; y &amp;&amp; z"})]


@GENS
def test_reasoning_text_and_calls(gen: int) -> None:
    text = (
        "<think>I want to get the weather.</think>\n\nI will help you.\n"
        + call45("get_weather", city="北京", date="2025-08-01")
        + "\n\nmeanwhile, Shanghai.\n\n"
        + call45("get_weather", city="上海")
    )
    msg = run(text, gen, **G)
    assert msg.reasoning_content == "I want to get the weather."
    assert msg.content == "\n\nI will help you.\n\nmeanwhile, Shanghai."
    assert calls(msg) == [
        ("get_weather", {"city": "北京", "date": "2025-08-01"}),
        ("get_weather", {"city": "上海"}),
    ]


@GENS
def test_prefilled_think_and_call_ending_reasoning(gen: int) -> None:
    msg = run("plan it" + call47("f", a="1"), gen, prompt="<|assistant|><think>", **G)
    assert (msg.reasoning_content, calls(msg)) == ("plan it", [("f", {"a": "1"})])


@GENS
def test_malformed_is_content_next_call_parses(gen: int) -> None:
    bad = "<tool_call>this is not\na call</tool_call>"
    msg = run(bad + " ok " + call47("g", a="1"), gen, **G)
    assert msg.content == bad + " ok"
    assert calls(msg) == [("g", {"a": "1"})]


def test_unterminated_v1_content_v2_closed() -> None:
    text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>"
    v1 = run(text, 1, **G)
    assert (v1.content, v1.tool_calls) == (text, [])
    v2 = run(text, 2, **G)  # never repaired: the arguments as streamed
    assert [(c.name, c.arguments) for c in v2.tool_calls] == [("get_weather", '{"city":"Beijing"')]


@GENS
def test_quoted_marker_v2_only(gen: int) -> None:
    text = 'Wrap calls in "<tool_call>" tags.'
    msg = run(text, gen, **G)
    assert (msg.content, msg.tool_calls) == (text, [])


def test_v2_streams_string_value_v1_whole() -> None:
    text = call47("f", s="a fairly long string argument")
    chunks: dict[int, list[str]] = {1: [], 2: []}
    for gen in (1, 2):
        p = StreamParser(generation=gen, **G)
        for ch in text:
            for d in p.feed(ch):
                chunks[gen] += [c.arguments for c in d.tool_calls if c.arguments]
        for d in p.finish():
            chunks[gen] += [c.arguments for c in d.tool_calls if c.arguments]
    assert chunks[1] == ['{"s":"a fairly long string argument"}']
    assert len(chunks[2]) > 10 and "".join(chunks[2]) == chunks[1][0]


def test_glm45_is_an_alias_of_glm47() -> None:
    assert calls(parse(call47("f"), tool_parser="glm45", generation=2)) == [("f", {})]


@pytest.mark.parametrize("generation", [1, 2])
@pytest.mark.parametrize("value", ["[1e999]", "NaN", '{"x": Infinity}'])
def test_values_json_cannot_carry_keep_their_text(generation: int, value: str) -> None:
    """`[1e999]` parses in Python as [inf], which no JSON reader accepts back: the arguments
    must stay valid JSON, so the value keeps its text (as DSML does)."""
    text = f"<tool_call>f<arg_key>a</arg_key><arg_value>{value}</arg_value></tool_call>"
    msg = parse(text, tool_parser="glm47", generation=generation)
    (call,) = msg.tool_calls
    assert json.loads(call.arguments) == {"a": value}
