"""Conformance: Qwen3 Hermes-style calls (`hermes`) against other implementations' tests.

Ported from vLLM `tests/tool_parsers/test_hermes_tool_parser.py` (VLLM), SGLang
`test/registered/function_call/test_qwen25_detector.py` (SGLANG) and Dynamo
`lib/parsers/src/tool_calling/test_cases/fixtures/hermes.rs` (DYNAMO). Token-by-token and
`stream_interval` feeding become fixed-size character chunks; each case runs in both
generations unless it is about a documented V1/V2 difference. Adaptations are commented with
the contract line (`docs/parsers.md`) that decides them.
"""

from __future__ import annotations

import json

import pytest
from conformance_check import feed, sized
from parser_check import calls, run, tool

H = {"tool_parser": "hermes", "reasoning_parser": "qwen3"}
GENS = pytest.mark.parametrize("gen", [1, 2])
WEATHER = tool("get_weather", city="string", unit={"type": "string", "enum": ["c", "f"]})
SEARCH = tool("search", query="string")


# --- VLLM ------------------------------------------------------------------------------


@GENS
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_vllm_streaming_just_forward_text(gen: int, size: int) -> None:
    text = "This is some prior text that has nothing to do with tool calling."
    s = feed(sized(text, size), gen, **H)
    assert (s.content, s.names) == (text, {})
    assert run(text, gen, **H).content == text


@GENS
@pytest.mark.parametrize("size", [1, 2, 5])
def test_vllm_bug_19056_boolean_arguments(gen: int, size: int) -> None:
    text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>'
    s = feed(sized(text, size), gen, **H)
    assert s.names == {0: "final_answer"}
    # vLLM asserts the exact text: the model's spacing is kept (docs/parsers.md, API)
    assert s.args[0] == '{"trigger": true}'
    msg = run(text, gen, **H)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("final_answer", '{"trigger": true}')
    ]
    assert msg.content is None


@GENS
def test_vllm_streaming_temperature_call(gen: int) -> None:
    text = (
        '<tool_call>{"name": "get_current_temperature","arguments": {"location":'
        '"San Francisco, California, United States", "unit": "celsius"}}</tool_call>'
    )
    s = feed(list(text), gen, **H)
    assert s.names[0] == "get_current_temperature"
    assert s.call_args(0) == {
        "location": "San Francisco, California, United States",
        "unit": "celsius",
    }


@GENS
@pytest.mark.parametrize("size", [2, 3, 5, 8])
def test_vllm_stream_interval_call_and_content(gen: int, size: int) -> None:
    text = (
        "Sure, let me check the weather."
        '<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>'
    )
    s = feed(sized(text, size), gen, **H)
    assert s.content == "Sure, let me check the weather."
    assert (s.names[0], s.call_args(0)) == ("get_weather", {"city": "NYC"})


@GENS
@pytest.mark.parametrize("size", [1, 2, 4])
def test_vllm_stream_interval_multiple_calls(gen: int, size: int) -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call>'
        '<tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>'
    )
    s = feed(sized(text, size), gen, **H)
    assert s.names == {0: "search", 1: "search"}
    assert (s.call_args(0), s.call_args(1)) == ({"q": "cats"}, {"q": "dogs"})
    assert calls(run(text, gen, **H)) == [("search", {"q": "cats"}), ("search", {"q": "dogs"})]


@GENS
def test_vllm_non_streaming_no_tool_call(gen: int) -> None:
    msg = run("This is not a tool call.", gen, **H)
    assert (msg.tool_calls, msg.content, msg.finish_reason) == (
        [],
        "This is not a tool call.",
        "stop",
    )


@GENS
def test_vllm_non_streaming_call_until_eos(gen: int) -> None:
    # no `</tool_call>`: the complete object is still a call (docs/parsers.md, Hermes)
    text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}'
    msg = run(text, gen, **H)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("final_answer", '{"trigger": true}')
    ]
    assert msg.content is None


def test_vllm_non_streaming_invalid_json_v1() -> None:
    text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'
    msg = run(text, 1, **H)
    assert (msg.tool_calls, msg.content) == ([], text)


def test_vllm_non_streaming_invalid_json_v2_divergence() -> None:
    # Divergence (docs/parsers.md "Conformance notes"): V2 sent the call's name as soon as it
    # was complete (principle 4), and batch must equal streaming (principle 2), so the cut-off
    # object is closed with what arrived instead of becoming content.
    text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'
    msg = run(text, 2, **H)
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("final_answer", {"trigger": True})
    ]


@GENS
@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_vllm_serialized_arguments_decoded_once(gen: int, size: int) -> None:
    text = (
        "<tool_call>\n"
        '{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}\n'
        "</tool_call>"
    )
    msg = run(text, gen, **H)
    assert calls(msg) == [("get_db_config", {"param": "max_connections"})]
    s = feed(sized(text, size), gen, **H)
    assert s.call_args(0) == {"param": "max_connections"}


@GENS
@pytest.mark.parametrize("size", [1, 3])
def test_vllm_bare_string_arguments_stay_valid_json(gen: int, size: int) -> None:
    text = '<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>'
    msg = run(text, gen, **H)
    assert json.loads(msg.tool_calls[0].arguments) == "hello"
    assert feed(sized(text, size), gen, **H).call_args(0) == "hello"


@GENS
@pytest.mark.parametrize(
    "value",
    ['{"param": "max_connections"}', "hello", "{hello world}", "[oops", '{"a": 1} tail text'],
)
@pytest.mark.parametrize("size", [1, 3])
def test_vllm_string_arguments_streaming_matches_batch(gen: int, value: str, size: int) -> None:
    text = "<tool_call>" + json.dumps({"name": "f", "arguments": value}) + "</tool_call>"
    expected = run(text, gen, **H).tool_calls[0].arguments
    s = feed(sized(text, size), gen, **H)
    assert s.args[0] == expected
    decoded = json.loads(expected)  # valid JSON whatever the model wrote
    if value.startswith('{"param'):
        assert decoded == {"param": "max_connections"}
    else:
        assert decoded == value


@GENS
def test_vllm_content_and_call_in_one_chunk(gen: int) -> None:
    text = 'Hi!<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    s = feed([text], gen, **H)
    assert (s.content, s.names[0], s.call_args(0)) == ("Hi!", "f", {"x": 1})


# --- SGLANG ------------------------------------------------------------------------------


@GENS
def test_sglang_single_and_multiple_arguments(gen: int) -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "London", "unit": "c"}}\n'
        "</tool_call>"
    )
    msg = run(text, gen, tools=[WEATHER, SEARCH], **H)
    assert calls(msg) == [("get_weather", {"city": "London", "unit": "c"})]
    assert msg.content is None


@GENS
def test_sglang_normal_text_before_call_is_stripped(gen: int) -> None:
    text = (
        'Let me check the weather. <tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Tokyo"}}\n</tool_call>'
    )
    msg = run(text, gen, tools=[WEATHER], **H)
    assert msg.content == "Let me check the weather."
    assert calls(msg) == [("get_weather", {"city": "Tokyo"})]


@GENS
def test_sglang_parallel_calls(gen: int) -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "search", "arguments": {"query": "restaurants"}}\n</tool_call>'
    )
    msg = run(text, gen, tools=[WEATHER, SEARCH], **H)
    assert calls(msg) == [
        ("get_weather", {"city": "Beijing"}),
        ("search", {"query": "restaurants"}),
    ]
    assert msg.content is None  # the newline between the calls is layout


@GENS
def test_sglang_malformed_block_does_not_swallow_the_next(gen: int) -> None:
    bad = "<tool_call>\n{not valid json}\n</tool_call>"
    text = bad + '\n<tool_call>\n{"name": "search", "arguments": {"query": "books"}}\n</tool_call>'
    msg = run(text, gen, tools=[SEARCH], **H)
    assert calls(msg) == [("search", {"query": "books"})]
    # Adaptation (principle 1 lossless: "Text of a call that does not parse is returned as
    # content, verbatim"): SGLang drops the broken block, we return it.
    assert msg.content == bad


@GENS
def test_sglang_streaming_chunks_split_the_opener(gen: int) -> None:
    chunks = [
        "<tool_",
        'call>\n{"name": "get_weather",',
        ' "arguments": {"city": "Beijing"',
        "}}\n</tool_call>",
    ]
    s = feed(chunks, gen, tools=[WEATHER], **H)
    assert (s.content, s.names, s.call_args(0)) == ("", {0: "get_weather"}, {"city": "Beijing"})


@GENS
def test_sglang_streaming_text_then_call(gen: int) -> None:
    chunks = [
        "I'll look that up. ",
        '<tool_call>\n{"name": "get_weather",',
        ' "arguments": {"city": "Tokyo", "unit": "c"',
        "}}\n</tool_call>",
    ]
    s = feed(chunks, gen, tools=[WEATHER], **H)
    # Adaptation (parsers.md GLM example / docs "Blanks around calls"): the blank right before the
    # call marker is markup, so content is "I'll look that up." (SGLang streams the blank).
    assert s.content == "I'll look that up."
    assert s.call_args(0) == {"city": "Tokyo", "unit": "c"}


@GENS
@pytest.mark.parametrize("prefix", ["hello <tool_", "I think <tool"])
def test_sglang_partial_opener_is_held_back(gen: int, prefix: str) -> None:
    s = feed([prefix], gen, **H)
    first = s.deltas[0]
    assert all("<tool" not in (d.content or "") for d in first)
    assert not any(d.tool_calls for d in first)
    # a marker cut by the end of output is markup, dropped; the prose stays
    assert s.content == prefix[: prefix.index("<")]


def test_sglang_name_first_then_arguments_v2() -> None:
    chunks = ['<tool_call>\n{"name": "search",', ' "arguments": {"query": "x"}}\n</tool_call>']
    s = feed(chunks, 2, **H)
    first = [tc for d in s.deltas[0] for tc in d.tool_calls]
    assert [(tc.name, tc.arguments) for tc in first] == [("search", None)]
    assert s.call_args(0) == {"query": "x"}


# --- DYNAMO ------------------------------------------------------------------------------


@GENS
def test_dynamo_case_1_single_call(gen: int) -> None:
    text = '<tool_call>{"name":"get_weather","arguments":{"location":"NYC"}}\n</tool_call>'
    msg = run(text, gen, **H)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"NYC"}')
    ]
    assert msg.content is None


@GENS
def test_dynamo_case_5_missing_end_token_recovers(gen: int) -> None:
    # Dynamo marks this KnownBroken (0 calls); the JSON body is complete, so we recover the
    # call (docs/parsers.md, Hermes: "A complete object whose </tool_call> never comes is
    # still a call"), as vLLM does.
    text = '<tool_call>{"name":"get_weather","arguments":{"location":"NYC"}}\n'
    msg = run(text, gen, **H)
    assert calls(msg) == [("get_weather", {"location": "NYC"})]
    assert msg.content is None


# --- hot spots shared by the three suites ----------------------------------------------


@GENS
@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "f", "parameters": {"a": 1}}\n</tool_call>',
        '<tool_call>\n\n   {"name": "f", "arguments": {"a": 1}}   \n\n</tool_call>',
        '<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>',
    ],
    ids=["parameters_key", "blanks_inside_wrapper", "arguments_first"],
)
def test_call_object_variants(gen: int, text: str) -> None:
    msg = run(text, gen, **H)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("f", '{"a": 1}')]
    assert msg.content is None


@GENS
def test_invalid_json_block_does_not_swallow_the_next(gen: int) -> None:
    bad = '<tool_call>{"name": "f", "arguments": {bad}}</tool_call>'
    text = bad + '<tool_call>{"name": "g", "arguments": {}}</tool_call>'
    msg = run(text, gen, **H)
    assert (msg.tool_calls[-1].name, msg.tool_calls[-1].arguments) == ("g", "{}")
    if gen == 1:  # nothing of the broken block went out: it is content, verbatim
        assert (len(msg.tool_calls), msg.content) == (1, bad)
    else:  # V2 sent `f` when its name completed, never repaired; the unparsed rest is content
        assert (msg.tool_calls[0].name, msg.tool_calls[0].arguments) == ("f", "{")
        # the call's own close is its markup, not content
        assert msg.content == "bad}}"
