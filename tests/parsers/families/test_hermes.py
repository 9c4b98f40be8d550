"""Qwen3 Hermes-style calls (`hermes`, reasoning `qwen3`), both generations."""

from __future__ import annotations

import pytest
from parser_check import UUID_ID, calls, run, tool

from parsers import ConfigError, StreamParser, parse

H = {"tool_parser": "hermes", "reasoning_parser": "qwen3"}
GENS = pytest.mark.parametrize("gen", [1, 2])


def call(name: str, args: str, key: str = "arguments") -> str:
    return f'<tool_call>\n{{"name": "{name}", "{key}": {args}}}\n</tool_call>'


@GENS
def test_spec_example(gen: int) -> None:
    text = (
        '<think>Need weather.</think>Checking.<tool_call>\n{"name":"get_weather",'
        '"arguments":{"location":"Paris"}}\n</tool_call>'
    )
    msg = run(text, gen, **H)
    assert (msg.reasoning_content, msg.content) == ("Need weather.", "Checking.")
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"Paris"}')
    ]
    assert msg.finish_reason == "tool_calls"


@GENS
def test_several_calls_with_text_before_between_and_after(gen: int) -> None:
    text = (
        "Let me look.\n"
        + call("a", '{"x": 1}')
        + "\nThen:\n"
        + call("b", '{"y": [1, {"z": null}]}')
        + "\n"
        + call("c", "{}")
        + "\nAll done."
    )
    msg = run(text, gen, **H)
    assert msg.content == "Let me look.\nThen:\nAll done."
    assert calls(msg) == [("a", {"x": 1}), ("b", {"y": [1, {"z": None}]}), ("c", {})]


@GENS
def test_parameters_key_and_string_arguments_decoded_once(gen: int) -> None:
    text = call("a", '{"q": "x"}', key="parameters") + call("b", '"{\\"n\\": 2}"')
    msg = run(text, gen, **H)
    assert calls(msg) == [("a", {"q": "x"}), ("b", {"n": 2})]
    assert msg.tool_calls[1].arguments == '{"n":2}'


@GENS
def test_arguments_before_name_and_missing_arguments(gen: int) -> None:
    text = '<tool_call>{"arguments": {"k": true}, "name": "late"}</tool_call>'
    text += '<tool_call>{"name": "bare"}</tool_call>'
    assert calls(run(text, gen, **H)) == [("late", {"k": True}), ("bare", {})]


@GENS
def test_non_ascii_and_nested_json_kept_unescaped(gen: int) -> None:
    text = "Wetter in Zürich? ☀ " + call("w", '{"city": "Zürich", "tags": {"a": ["ß", "\\u00e9"]}}')
    msg = run(text, gen, **H)
    assert msg.content == "Wetter in Zürich? ☀"
    # the model's spacing is kept; escapes of non-ASCII text are written out
    assert msg.tool_calls[0].arguments == '{"city": "Zürich", "tags": {"a": ["ß", "é"]}}'


@GENS
def test_malformed_call_is_content_and_next_call_parses(gen: int) -> None:
    bad = "<tool_call>not json at all</tool_call>"
    text = "A " + bad + " B " + call("ok", '{"v": 1}')
    msg = run(text, gen, **H)
    assert msg.content == "A " + bad + " B"
    assert calls(msg) == [("ok", {"v": 1})]


@GENS
def test_unterminated_before_the_name_is_content(gen: int) -> None:
    text = 'Hold on <tool_call>{"na'
    msg = run(text, gen, **H)
    assert (msg.content, msg.tool_calls, msg.finish_reason) == (text, [], "stop")


def test_unterminated_after_the_name_v1_content_v2_closed() -> None:
    text = 'Hold on <tool_call>{"name": "f", "arguments": {"q": "Par'
    v1 = run(text, 1, **H, finish_reason="length")
    assert (v1.content, v1.tool_calls, v1.finish_reason) == (text, [], "length")
    # V2 already streamed the call's name and "Par": it stays, never repaired
    v2 = run(text, 2, **H, finish_reason="length")
    assert (v2.content, [(c.name, c.arguments) for c in v2.tool_calls], v2.finish_reason) == (
        "Hold on",
        [("f", '{"q": "Par')],
        "length",
    )


@GENS
def test_complete_object_without_closing_tag_is_a_call(gen: int) -> None:
    msg = run('<tool_call>{"name": "f", "arguments": {"a": 1}}', gen, **H)
    assert calls(msg) == [("f", {"a": 1})]


@GENS
def test_tool_marker_ends_unclosed_reasoning(gen: int) -> None:
    text = "<think>I should call it" + call("f", '{"a": 1}') + " ok"
    msg = run(text, gen, **H)
    assert (msg.reasoning_content, msg.content, calls(msg)) == (
        "I should call it",
        " ok",
        [("f", {"a": 1})],
    )


@GENS
def test_prefill_split_close_marker_then_call(gen: int) -> None:
    from parsers import stream

    prompt = "<|im_start|>assistant\n<think>\n"
    chunks = ["the user wants weather. thought<", "/think>", call("get_weather", '{"c": "P"}')]
    msg = stream(chunks, generation=gen, prompt=prompt, **H)
    assert msg.reasoning_content == "the user wants weather. thought"
    assert calls(msg) == [("get_weather", {"c": "P"})]
    assert msg.content is None


@GENS
def test_without_prefill_untagged_text_is_content(gen: int) -> None:
    msg = run("just an answer", gen, prompt="<|im_start|>assistant\n", **H)
    assert (msg.content, msg.reasoning_content) == ("just an answer", None)


def test_thinking_off_still_parses_explicit_markers() -> None:
    text = "<think>abc</think>def"
    for gen in (1, 2):
        msg = run(text, gen, thinking=False, **H)
        assert (msg.reasoning_content, msg.content) == ("abc", "def")


def test_tool_choice_none_v1_keeps_markup_v2_strips_it() -> None:
    text = "Hi " + call("f", "{}")
    tools = [tool("f")]
    v1 = run(text, 1, tools=tools, tool_choice="none", **H)
    v2 = run(text, 2, tools=tools, tool_choice="none", **H)
    assert (v1.content, v1.tool_calls, v1.finish_reason) == (text, [], "stop")
    assert (v2.content, v2.tool_calls, v2.finish_reason) == ("Hi", [], "stop")


@GENS
def test_named_choice_drops_other_calls_indexes_stay_dense(gen: int) -> None:
    tools = [tool("a"), tool("b")]
    choice = {"type": "function", "function": {"name": "b"}}
    text = call("a", "{}") + call("b", '{"n": 1}') + call("a", "{}") + call("b", '{"n": 2}')
    msg = run(text, gen, tools=tools, tool_choice=choice, **H)
    assert calls(msg) == [("b", {"n": 1}), ("b", {"n": 2})]
    p = StreamParser(generation=gen, tools=tools, tool_choice=choice, **H)
    deltas = [d for ch in text for d in p.feed(ch)] + p.finish()
    assert sorted({c.index for d in deltas for c in d.tool_calls}) == [0, 1]


@GENS
def test_required_guided_array_object_or_native(gen: int) -> None:
    tools = [tool("a", x="integer"), tool("b")]
    arr = ' [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "parameters": {}}]'
    assert calls(run(arr, gen, tools=tools, tool_choice="required", **H)) == [
        ("a", {"x": 1}),
        ("b", {}),
    ]
    obj = '{"name": "a", "arguments": {"x": 2}}'
    assert calls(run(obj, gen, tools=tools, tool_choice="required", **H)) == [("a", {"x": 2})]
    native = call("b", '{"k": "v"}')
    msg = run(native, gen, tools=tools, tool_choice="required", **H)
    assert (calls(msg), msg.finish_reason) == ([("b", {"k": "v"})], "tool_calls")


@GENS
def test_named_guided_bare_arguments(gen: int) -> None:
    tools = [tool("a", x="integer")]
    choice = {"type": "function", "function": {"name": "a"}}
    msg = run('\n{"x": 5, "note": "ü"}', gen, tools=tools, tool_choice=choice, **H)
    assert (calls(msg), msg.content, msg.finish_reason) == (
        [("a", {"x": 5, "note": "ü"})],
        None,
        "tool_calls",
    )


@GENS
def test_guided_json_after_reasoning(gen: int) -> None:
    tools = [tool("a")]
    text = '<think>pick a</think>[{"name": "a", "arguments": {}}]'
    msg = run(text, gen, tools=tools, tool_choice="required", **H)
    assert (msg.reasoning_content, calls(msg)) == ("pick a", [("a", {})])


@GENS
def test_invalid_guided_json_is_content(gen: int) -> None:
    tools = [tool("a")]
    msg = run("[not json", gen, tools=tools, tool_choice="required", **H)
    assert (msg.content, msg.tool_calls) == ("[not json", [])


@GENS
def test_finish_reason_length_without_calls(gen: int) -> None:
    msg = run("partial answ", gen, finish_reason="length", **H)
    assert msg.finish_reason == "length"


def test_ids_are_call_uuid_and_unique() -> None:
    msg = parse(call("a", "{}") + call("a", "{}"), generation=2, **H)
    ids = [c.id for c in msg.tool_calls]
    assert all(UUID_ID.match(i) for i in ids) and len(set(ids)) == 2


def test_unknown_parser_name_lists_known_names() -> None:
    with pytest.raises(ConfigError) as err:
        parse("x", tool_parser="hermes2")
    assert "hermes2" in str(err.value) and "qwen3_coder" in str(err.value)


def test_aliases_qwen3_and_qwen25_are_hermes() -> None:
    text = call("f", "{}")
    for name in ("qwen3", "Qwen25", "HERMES"):
        assert calls(parse(text, tool_parser=name, generation=2)) == [("f", {})]


def test_v2_streams_name_and_string_fragments_early() -> None:
    p = StreamParser(generation=2, **H)
    out = []
    for ch in '<tool_call>{"name": "f", "arguments": {"text": "hello world", "n": 12}}':
        out.append(p.feed(ch))
    heads = [i for i, ds in enumerate(out) for d in ds for c in d.tool_calls if c.name]
    frags = [c.arguments for ds in out for d in ds for c in d.tool_calls if c.arguments]
    assert heads and heads[0] < len(out) - 5
    assert "".join(frags) == '{"text": "hello world", "n": 12}'
    assert len(frags) > 5  # the string arrived piece by piece


@GENS
def test_vllm_between_tags_and_until_eos_keep_the_written_arguments(gen: int) -> None:
    body = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}'
    for text in (body + "\n</tool_call>", body):
        msg = run(text, gen, **H)
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [
            ("final_answer", '{"trigger": true}')
        ]
        assert msg.content is None


def test_vllm_invalid_json_v1_is_content() -> None:
    text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'
    msg = run(text, 1, **H)
    assert (msg.content, msg.tool_calls) == (text, [])
