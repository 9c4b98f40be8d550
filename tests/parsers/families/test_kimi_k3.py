"""Kimi K3 (`kimi_k3`): the channel grammar's cases in both generations.

Chunking invariance, losslessness and quoted openers run over parser_samples/kimi_k3.py in the
shared tests; here are the grammar's own rules, each checked on both routes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_check import call_deltas_by_chunk

from parsers import parse, stream
from parsers.families.kimi_k3 import decode_attr, parse_attrs
from parsers.ids import counter_ids
from parsers.types import ParsedMessage

K = "kimi_k3"
GENS = [1, 2]
ROUTE = {1: "legacy_jail", 2: "parser_v2"}
OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
END = f"{CLOSE}message{SEP}<|end_of_msg|>"
PLAIN = '<|open|>message role="assistant"<|sep|>'  # a prompt that opens no channel


def op(name: str, **attrs: str) -> str:
    return OPEN + name + "".join(f' {k}="{v}"' for k, v in attrs.items()) + SEP


def cl(name: str) -> str:
    return CLOSE + name + SEP


def arg(key: str, typ: str | None, value: str) -> str:
    attrs = {"key": key} if typ is None else {"key": key, "type": typ}
    return op("argument", **attrs) + value + cl("argument")


def call(name: str, index: int | None, *args: str) -> str:
    attrs = {"tool": name} if index is None else {"tool": name, "index": str(index)}
    return op("call", **attrs) + "".join(args) + cl("call")


def tools(*calls: str) -> str:
    return op("tools") + "".join(calls) + cl("tools")


def run(text: str, gen: int, **kw: Any) -> ParsedMessage:
    """Batch parse; also checks the route and that a per-character stream agrees."""
    kw.setdefault("tool_parser", K)
    kw.setdefault("reasoning_parser", K)  # the think channel is reasoning only with it
    msg = parse(text, generation=gen, id_factory=counter_ids(), **kw)
    assert msg.route == ROUTE[gen]
    assert stream(list(text), generation=gen, id_factory=counter_ids(), **kw) == msg
    return msg


def args_of(msg: ParsedMessage) -> list[Any]:
    return [json.loads(c.arguments) for c in msg.tool_calls]


@pytest.mark.parametrize("gen", GENS)
def test_spec_example(gen: int) -> None:
    text = (
        op("think") + "use the calculator" + cl("think")
        + op("response") + "I will calculate." + cl("response")
        + tools(call("calc", 1, arg("x", "number", "42"))) + END
    )  # fmt: skip
    msg = run(text, gen, reasoning_parser=K)
    assert msg.reasoning_content == "use the calculator"
    assert msg.content == "I will calculate."
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [("calc:0", "calc", '{"x":42}')]
    assert msg.finish_reason == "tool_calls"


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("prompt", [None, "x" + op("think"), "x<|open|> think <|sep|>\n"])
def test_output_starts_in_reasoning_when_the_prompt_opened_think(
    gen: int, prompt: str | None
) -> None:
    text = "step one" + cl("think") + op("response") + "answer" + cl("response") + END
    msg = run(text, gen, prompt=prompt)
    assert (msg.reasoning_content, msg.content) == ("step one", "answer")


@pytest.mark.parametrize("gen", GENS)
def test_prompt_that_opened_the_response(gen: int) -> None:
    prompt = "x" + op("think") + "r" + cl("think") + op("response")
    assert run("Hello" + cl("response") + END, gen, prompt=prompt).content == "Hello"
    assert run("Hello" + cl("message"), gen, prompt=prompt).content == "Hello"


@pytest.mark.parametrize("gen", GENS)
def test_several_calls_with_text_before_between_and_after(gen: int) -> None:
    text = (
        op("response") + "Let me check both." + cl("response")
        + op("tools") + "\n" + call("get_weather", 1, arg("city", "string", "Paris")) + "\n"
        + call("get_weather", 2, arg("city", "string", "Tokyo")) + "\n" + cl("tools")
        + " Afterwards I compare." + END
    )  # fmt: skip
    msg = run(text, gen, prompt=PLAIN)
    assert msg.content == "Let me check both. Afterwards I compare."
    assert [(c.id, c.name) for c in msg.tool_calls] == [
        ("get_weather:0", "get_weather"),
        ("get_weather:1", "get_weather"),
    ]
    assert args_of(msg) == [{"city": "Paris"}, {"city": "Tokyo"}]


@pytest.mark.parametrize("gen", GENS)
def test_plain_unwrapped_text_is_content(gen: int) -> None:
    text = "Plain text, no channels. " + tools(call("f", 1)) + " More text." + END
    msg = run(text, gen, prompt=PLAIN)
    # blanks right before a call opener are markup (as for every family)
    assert msg.content == "Plain text, no channels. More text."
    assert [c.name for c in msg.tool_calls] == ["f"]


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("opener", [op("tools"), ""])
def test_tool_marker_ends_unclosed_reasoning(gen: int, opener: str) -> None:
    body = call("search", 1, arg("q", "string", "kimi"))
    text = op("think") + "I should look it up" + (opener + body + cl("tools") if opener else body)
    msg = run(text + END, gen)
    assert (msg.reasoning_content, msg.content) == ("I should look it up", None)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("search", '{"q":"kimi"}')]


@pytest.mark.parametrize("gen", GENS)
def test_argument_types(gen: int) -> None:
    text = tools(
        call(
            "t",
            1,
            arg("plain", None, " keeps  blanks "),  # type="string" is the default
            arg("s", "string", '42 "quoted" ü'),
            arg("i", "number", "42"),
            arg("d", "number", "2.50"),
            arg("e", "number", "1e-3"),
            arg("neg", "number", "-0.5"),
            arg("b", "boolean", "true"),
            arg("n", "null", "null"),
            arg("o", "object", '{"a": [1, {"b": null}]}'),
            arg("a", "array", '["x", 2]'),
            arg("bad", "number", "forty-two"),
            arg("nan", "number", "NaN"),
        )
    )
    msg = run(text + END, gen)
    assert msg.tool_calls[0].arguments == (
        '{"plain":" keeps  blanks ","s":"42 \\"quoted\\" ü","i":42,"d":2.50,"e":1e-3,'
        '"neg":-0.5,"b":true,"n":null,"o":{"a":[1,{"b":null}]},"a":["x",2],'
        '"bad":"forty-two","nan":"NaN"}'
    )


def test_attribute_escapes() -> None:
    assert decode_attr("a &quot;b&quot; &amp; c") == 'a "b" & c'
    assert decode_attr("&amp;quot;") == "&quot;"  # an escaped entity stays literal text
    assert parse_attrs('key="a" type="number" key="b"') == {"key": "b", "type": "number"}


@pytest.mark.parametrize("gen", GENS)
def test_escaped_attributes_in_calls(gen: int) -> None:
    text = tools(call("a&amp;b", 1, arg("say &quot;hi&quot;", "string", "x"))) + END
    msg = run(text, gen)
    assert [(c.id, c.name) for c in msg.tool_calls] == [("a&b:0", "a&b")]
    assert args_of(msg) == [{'say "hi"': "x"}]


@pytest.mark.parametrize("gen", GENS)
def test_duplicate_key_last_wins(gen: int) -> None:
    text = tools(call("f", 1, arg("k", "string", "first"), arg("k", "number", "2"))) + END
    msg = run(text, gen)
    assert args_of(msg) == [{"k": 2}]
    if gen == 1:  # whole calls: one key
        assert msg.tool_calls[0].arguments == '{"k":2}'
    else:  # streamed as it came: both pairs, JSON readers keep the last
        assert msg.tool_calls[0].arguments == '{"k":"first","k":2}'


@pytest.mark.parametrize("gen", GENS)
def test_call_ids(gen: int) -> None:
    text = tools(call("a", 1), call("b", 3), call("c", None), call("a", 1)) + END
    text = text.replace('index="3"', 'index=" 03 "')
    msg = run(text, gen)
    # NAME:(index-1); no index: the call's position; a repeated id gets the position instead
    assert [c.id for c in msg.tool_calls] == ["a:0", "b:2", "c:2", "a:3"]


@pytest.mark.parametrize("gen", GENS)
def test_json_channel_keeps_the_bytes(gen: int) -> None:
    body = '{"b": 1,  "a": ["ü", {"x": null}]}'
    msg = run(tools(call("j", 1, op("json", type="object") + body + cl("json"))) + END, gen)
    assert msg.tool_calls[0].arguments == body


@pytest.mark.parametrize("gen", GENS)
def test_empty_arguments(gen: int) -> None:
    text = tools(call("now", 1), call("j", 2, op("json") + " " + cl("json"))) + END
    msg = run(text, gen)
    assert [c.arguments for c in msg.tool_calls] == ["{}", "{}"]


@pytest.mark.parametrize("gen", GENS)
def test_non_ascii(gen: int) -> None:
    text = (
        op("think") + "Météo ☀" + cl("think") + op("response") + "東京は晴れ" + cl("response")
        + tools(call("météo", 1, arg("ville", "string", "Zürich"))) + END
    )  # fmt: skip
    msg = run(text, gen)
    assert (msg.reasoning_content, msg.content) == ("Météo ☀", "東京は晴れ")
    assert msg.tool_calls[0].arguments == '{"ville":"Zürich"}'
    assert msg.tool_calls[0].name == "météo"


@pytest.mark.parametrize("gen", GENS)
def test_whitespace_between_marker_parts(gen: int) -> None:
    text = (
        "<|open|>\tthink <|sep|>r<|close|> think\n<|sep|><|open|> response <|sep|>ok"
        '<|close|> response <|sep|><|open|> tools <|sep|><|open|>call  tool="f"\n index="1" '
        '<|sep|><|open|> argument key="k" type="number" <|sep|>7<|close|> argument <|sep|>'
        "<|close|> call <|sep|><|close|> tools <|sep|><|close|> message <|sep|>"
    )
    msg = run(text, gen)
    assert (msg.reasoning_content, msg.content) == ("r", "ok")
    assert [(c.id, c.arguments) for c in msg.tool_calls] == [("f:0", '{"k":7}')]


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("end", [END, cl("message"), "<|end_of_msg|>"])
def test_text_after_the_message_end_is_dropped(gen: int, end: str) -> None:
    text = op("response") + "done" + cl("response") + end + "stray <|open|>tools<|sep|> text"
    msg = run(text, gen, prompt=PLAIN)
    assert (msg.content, msg.tool_calls) == ("done", [])


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize(
    "text",
    [
        "a <|open|>unknown<|sep|> b",  # not a channel name
        "a <|open|> b <|close|>",  # no separator
        "a <|open|>tools b <|open|>",  # another token before a separator
        "a <|sep|> b <|close|>|",
    ],
)
def test_marker_lookalikes_are_text(gen: int, text: str) -> None:
    msg = run(text, gen, prompt=PLAIN)
    assert (msg.content, msg.tool_calls) == (text, [])


def test_quoted_call_marker_with_attribute_quotes_then_a_real_call() -> None:
    quoted = 'See "' + op("call", tool="f", index="1") + '" here.'
    msg = run(quoted + " " + tools(call("g", 1)) + END, 2, prompt=PLAIN)
    assert msg.content == quoted  # the marker's own attribute quotes do not end the quote
    assert [c.name for c in msg.tool_calls] == ["g"]


@pytest.mark.parametrize("gen", GENS)
def test_token_lookalike_inside_a_string_value(gen: int) -> None:
    text = tools(call("f", 1, arg("city", "string", "<|open|>Seattle"))) + END
    assert args_of(run(text, gen)) == [{"city": "<|open|>Seattle"}]


@pytest.mark.parametrize("gen", GENS)
def test_missing_closes_are_implied(gen: int) -> None:
    text = (
        op("tools") + op("call", tool="a", index="1") + op("argument", key="x") + "1"
        + op("call", tool="b", index="2") + arg("y", "number", "2") + cl("tools")
        + op("response") + "after" + cl("response") + END
    )  # fmt: skip
    msg = run(text, gen, prompt=PLAIN)
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("a", {"x": "1"}),
        ("b", {"y": 2}),
    ]
    assert msg.content == "after"


@pytest.mark.parametrize("gen", GENS)
def test_call_without_tool_name_is_content_and_next_call_parses(gen: int) -> None:
    bad = op("call", index="1") + arg("x", "string", "1") + cl("call")
    msg = run(tools(bad, call("g", 2)) + END, gen)
    assert msg.content == bad
    assert [(c.id, c.name) for c in msg.tool_calls] == [("g:1", "g")]


@pytest.mark.parametrize("gen", GENS)
def test_unterminated_call_at_end_of_output(gen: int) -> None:
    cut = op("tools") + op("call", tool="f", index="1") + op("argument", key="q") + "ab"
    msg = run(op("response") + "Working." + cl("response") + cut, gen, prompt=PLAIN)
    if gen == 1:  # the jail releases the unparsed region verbatim
        assert (msg.content, msg.tool_calls) == ("Working." + cut, [])
    else:  # V2 already streamed the call: it stays, never repaired (arguments as streamed)
        assert msg.content == "Working."
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("f", '{"q":"ab')]


@pytest.mark.parametrize("gen", GENS)
def test_cut_off_marker_at_the_end_is_text(gen: int) -> None:
    msg = run("answer <|open|>too", gen, prompt=PLAIN)
    assert msg.content == "answer <|open|>too"


@pytest.mark.parametrize("gen", GENS)
def test_thinking_off_still_parses_explicit_markers(gen: int) -> None:
    text = op("think") + "hm" + cl("think") + op("response") + "42" + cl("response") + END
    msg = run(text, gen, thinking=False)
    assert (msg.reasoning_content, msg.content) == ("hm", "42")


@pytest.mark.parametrize("gen", GENS)
def test_no_reasoning_parser_no_reasoning_content(gen: int) -> None:
    # the tool parser alone: the think channel's markers are markup, its text content
    text = op("think") + "hm" + cl("think") + op("response") + "42" + cl("response") + END
    for prompt in (None, PLAIN):
        msg = run(text, gen, reasoning_parser=None, prompt=prompt)
        assert (msg.reasoning_content, msg.content) == (None, "hm42")


def test_tool_choice_none() -> None:
    text = op("response") + "Answer." + cl("response") + tools(call("f", 1)) + END
    v2 = run(text, 2, tool_choice="none", prompt=PLAIN)
    assert (v2.content, v2.tool_calls, v2.finish_reason) == ("Answer.", [], "stop")
    v1 = run(text, 1, tool_choice="none", prompt=PLAIN)  # no tool parsing at all
    assert (v1.content, v1.tool_calls) == ("Answer." + tools(call("f", 1)), [])


@pytest.mark.parametrize("gen", GENS)
def test_forced_choice_accepts_guided_json_or_native_markup(gen: int) -> None:
    spec = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    guided = run(
        '[{"name": "f", "arguments": {"a": 1}}]',
        gen,
        tools=spec,
        tool_choice="required",
        prompt=PLAIN,
    )
    # guided JSON arguments keep the model's spacing (docs/parsers.md)
    assert [(c.name, c.arguments) for c in guided.tool_calls] == [("f", '{"a": 1}')]
    named = {"type": "function", "function": {"name": "f"}}
    native = run(
        tools(call("f", 1, arg("a", "number", "2"))) + END, gen, tools=spec, tool_choice=named
    )
    assert [(c.id, c.arguments) for c in native.tool_calls] == [("f:0", '{"a":2}')]


def test_v2_streams_arguments_before_the_call_ends_v1_sends_it_whole() -> None:
    chunks = [
        op("tools") + op("call", tool="search", index="1"),
        op("argument", key="q", type="string") + "rust",
        " programming" + cl("argument"),
        op("argument", key="n", type="number") + "5",
        cl("argument"),
        cl("call"),
        cl("tools") + END,
    ]
    seen = {gen: call_deltas_by_chunk(chunks, gen, tool_parser=K, prompt=PLAIN) for gen in GENS}
    # V2: the name once the call marker is complete, string text as it arrives, the number
    # (with its key) once its channel closes
    assert seen[2] == [
        (0, "search", None),
        (1, None, '{"q":"rust'),
        (2, None, ' programming"'),
        (4, None, ',"n":5'),
        (5, None, "}"),
    ]
    # V1: the tools region is jailed until it closes, then the whole call in one delta
    assert seen[1] == [(6, "search", '{"q":"rust programming","n":5}')]


@pytest.mark.parametrize("gen", GENS)
def test_orphan_argument_ends_reasoning_and_is_content(gen: int) -> None:
    orphan = arg("unit", "string", "celsius") + cl("call")
    msg = run("Choose the unit." + orphan + cl("tools"), gen)
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == ("Choose the unit.", orphan, [])


@pytest.mark.parametrize("gen", GENS)
def test_bare_call_without_tools_wrapper_ends_reasoning(gen: int) -> None:
    text = "Call the calculator." + call("calc", 1, arg("x", "number", "5")) + END
    msg = run(text, gen)
    assert (msg.reasoning_content, msg.content) == ("Call the calculator.", None)
    assert [(c.id, c.arguments) for c in msg.tool_calls] == [("calc:0", '{"x":5}')]


@pytest.mark.parametrize("gen", GENS)
def test_prefill_split_think_close_then_call(gen: int) -> None:
    chunks = ["The user wants weather. thought<|clo", "se|>think<|sep|>", tools(call("w", 1)), END]
    msg = stream(
        chunks, tool_parser=K, reasoning_parser=K, generation=gen, prompt="x<|open|>think<|sep|>"
    )
    assert msg.reasoning_content == "The user wants weather. thought"
    assert [c.name for c in msg.tool_calls] == ["w"]


@pytest.mark.parametrize("gen", GENS)
def test_second_argument_style_in_a_call_is_content(gen: int) -> None:
    extra = op("argument", key="k") + "v" + cl("argument")
    json_call = call("j", 1, op("json") + '{"a": 1}' + cl("json") + extra)
    msg = run(tools(json_call) + END, gen)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("j", '{"a": 1}')]
    assert msg.content == extra
