"""Conformance: DeepSeek V4 (`deepseek_v4`) and V4.1 (`deepseek_v41`) DSML, cases ported from
other implementations' test suites.

Sources (cited per test):
- vLLM tests/tool_parsers/test_deepseekv4_tool_parser.py            [vllm-v4]
- vLLM tests/tool_parsers/test_deepseekv32_tool_parser.py           [vllm-v32] (V3.2 wrapper
  `function_calls` renamed to V4's `tool_calls`: the V3.2 grammar inside is the same)
- vLLM tests/tool_use/test_deepseek_v32_tool_parser.py              [vllm-v32-use] (same rename)
- vLLM tests/reasoning/test_deepseekv4_reasoning_parser.py          [vllm-v4-reasoning]
- vLLM tests/parser/engine/test_deepseek_v4.py, test_deepseek_v41.py [vllm-engine]
- SGLang test/registered/function_call/test_deepseekv32_detector.py [sglang]
- Dynamo lib/parsers/src/tool_calling/dsml/parser.rs tests, fixtures/deepseek_v4.rs [dynamo]

Every case runs batch (`parsers.parse`) and streaming (`parsers.stream`, character by character
and a 3-way split, via `parser_check.run`) in both generations where the family has both.

Adaptations (our contract decides differently; docs/parsers.md):
- BLANKS: whitespace right before a call block is markup (parsers.md GLM example `I'll check the
  weather for you. <tool_call>…` gives content without the blank; docs/parsers.md "Blanks
  around calls"), so `"Let me check. " + block` gives content `"Let me check."`.
- TRIM: `string="true"` values are trimmed (docs/parsers.md DeepSeek V4: "gives the raw text
  (trimmed)"); vLLM keeps `"Paris "`.
- RAW: `string="true"` is never coerced by the schema (docs/parsers.md DeepSeek V4: "`string="true"`
  gives the raw text"), `string="false"` is JSON else a string, without schema (docs/parsers.md:
  "parses as JSON, falling back to a string"; Dynamo does the same); vLLM's V3.2 engine parser
  coerces both by the schema (`"42"` -> 42, `null` -> `"null"` for a string schema).
- KEEP: text after a block is content (docs/parsers.md principle 1, lossless).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_check import calls, run, tool

from parsers import StreamParser, parse, stream
from parsers.ids import counter_ids

B = "\uff5c"
TS = f"<{B}DSML{B}tool_calls>"
TE = f"</{B}DSML{B}tool_calls>"
INV = f'<{B}DSML{B}invoke name="'
IE = f"</{B}DSML{B}invoke>"
PS = f'<{B}DSML{B}parameter name="'
PE = f"</{B}DSML{B}parameter>"
T = {"tool_parser": "deepseek_v4"}
R = {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4"}
V41 = {"tool_parser": "deepseek_v41", "reasoning_parser": "deepseek_v41"}
GENS = pytest.mark.parametrize("gen", [1, 2])


def param(name: str, value: str, string: str = "true") -> str:
    return f'{PS}{name}" string="{string}">{value}{PE}'


def build(name: str, params: dict[str, str]) -> str:
    """vllm-v32/vllm-v4 `build_tool_call`: string="true" parameters, newline-separated."""
    body = "".join(param(k, v) + "\n" for k, v in params.items())
    return f'{TS}\n{INV}{name}">\n{body}{IE}\n{TE}'


def invoke(name: str, *params: tuple[str, str, str]) -> str:
    """vllm-engine `_invoke`: (name, string, value) parameters."""
    body = "\n".join(param(n, v, s) for n, s, v in params)
    return f'{INV}{name}">\n{body}\n{IE}'


def block(*invokes: str) -> str:
    return TS + "\n".join(invokes) + TE


def args_of(msg: Any) -> list[Any]:
    return [json.loads(c.arguments) for c in msg.tool_calls]


def deltas(chunks: list[str], gen: int, **kw: Any) -> list[Any]:
    p = StreamParser(generation=gen, id_factory=counter_ids(), **kw)
    out = [(i, d) for i, c in enumerate(chunks) for d in p.feed(c)]
    out += [(len(chunks), d) for d in p.finish()]
    return out


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def streamed(chunks: list[str], gen: int, **kw: Any) -> Any:
    """The stream aggregate, after checking it equals the batch result (principle 2)."""
    msg = stream(chunks, generation=gen, id_factory=counter_ids(), **kw)
    assert msg == parse("".join(chunks), generation=gen, id_factory=counter_ids(), **kw)
    return msg


def lines(text: str) -> list[str]:
    """vllm-v32 `_stream`: one chunk per line, newline kept."""
    return text.splitlines(keepends=True)


# --- [vllm-v4] -------------------------------------------------------------------------------


@GENS
def test_vllm_v4_extract_tool_calls(gen: int) -> None:
    text = "Let me check. " + build("get_weather", {"location": "Beijing", "unit": "celsius"})
    msg = run(text, gen, **T)
    assert msg.content == "Let me check."  # BLANKS (vLLM: "Let me check. ")
    assert calls(msg) == [("get_weather", {"location": "Beijing", "unit": "celsius"})]
    assert msg.finish_reason == "tool_calls"


@GENS
def test_vllm_v4_function_calls_block_is_not_accepted(gen: int) -> None:
    text = build("search", {"query": "vllm"}).replace("tool_calls", "function_calls")
    msg = run(text, gen, **T)
    assert (msg.content, msg.tool_calls) == (text, [])


@GENS
def test_vllm_v4_streaming_extracts_complete_invokes(gen: int) -> None:
    text = build("search", {"query": "deepseek v4"})
    msg = stream(chunked(text, 5), generation=gen, **T)
    assert calls(msg) == [("search", {"query": "deepseek v4"})]
    names = [c.name for _, d in deltas(chunked(text, 5), gen, **T) for c in d.tool_calls if c.name]
    assert names == ["search"]


# --- [vllm-v32] extract_tool_calls ------------------------------------------------------------


@GENS
def test_vllm_v32_no_tool_call(gen: int) -> None:
    msg = run("just some text", gen, **T)
    assert (msg.content, msg.tool_calls) == ("just some text", [])


@GENS
def test_vllm_v32_single_tool_no_params(gen: int) -> None:
    msg = run(f'{TS}\n{INV}get_time">\n{IE}\n{TE}', gen, **T)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_time", "{}")]


@GENS
def test_vllm_v32_single_tool_with_params_and_no_content(gen: int) -> None:
    msg = run(build("get_weather", {"location": "SF", "date": "2024-01-16"}), gen, **T)
    assert calls(msg) == [("get_weather", {"location": "SF", "date": "2024-01-16"})]
    assert msg.content is None  # test_no_content_prefix_returns_none


@GENS
def test_vllm_v32_content_before_tool_call(gen: int) -> None:
    msg = run("Sure, let me check! " + build("get_weather", {"location": "NYC"}), gen, **T)
    assert msg.content == "Sure, let me check!"  # BLANKS
    assert calls(msg) == [("get_weather", {"location": "NYC"})]


@GENS
def test_vllm_v32_multiple_tools(gen: int) -> None:
    text = block(
        invoke("get_weather", ("location", "true", "SF")),
        invoke("get_weather", ("location", "true", "NYC")),
    )
    msg = run(text, gen, **T)
    assert args_of(msg) == [{"location": "SF"}, {"location": "NYC"}]
    assert len({c.id for c in msg.tool_calls}) == 2


TOGGLE = tool("toggle", enabled="boolean", count="integer")
SCORE = tool("score", value="integer")


@GENS
def test_vllm_v32_type_conversion_string_false(gen: int) -> None:
    text = block(invoke("toggle", ("enabled", "false", "true"), ("count", "false", "42")))
    args = args_of(run(text, gen, tools=[TOGGLE], **T))[0]
    assert args == {"enabled": True, "count": 42}
    assert isinstance(args["enabled"], bool) and isinstance(args["count"], int)


@GENS
def test_vllm_v32_string_true_stays_text(gen: int) -> None:
    # RAW: vLLM's engine parser coerces this to 42 by the schema; the contract keeps the text.
    text = block(invoke("score", ("value", "true", "42")))
    assert args_of(run(text, gen, tools=[SCORE], **T)) == [{"value": "42"}]


@GENS
def test_vllm_v32_string_false_allows_number(gen: int) -> None:
    text = block(invoke("score", ("value", "false", "42")))
    assert args_of(run(text, gen, tools=[SCORE], **T)) == [{"value": 42}]


COMPOSED = tool(
    "set_timer",
    wait={"anyOf": [{"type": "object"}, {"type": "null"}]},
    patches={"oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "null"}]},
)
WAIT = '{"type":"for","minutes":2880}'
PATCHES = '[{"op":"replace","path":"/schedule","value":"quiet"}]'


@GENS
def test_vllm_v32_composed_schema_object_and_array(gen: int) -> None:
    text = block(invoke("set_timer", ("wait", "false", WAIT), ("patches", "false", PATCHES)))
    args = args_of(run(text, gen, tools=[COMPOSED], **T))[0]
    assert args == {"wait": json.loads(WAIT), "patches": json.loads(PATCHES)}


@GENS
def test_vllm_v32_string_true_with_composed_schema_stays_text(gen: int) -> None:
    # RAW: vLLM coerces to the object; string="true" gives the raw text here.
    text = block(invoke("set_timer", ("wait", "true", WAIT)))
    assert args_of(run(text, gen, tools=[COMPOSED], **T)) == [{"wait": WAIT}]


WEATHER = tool("get_weather", location="string")


@GENS
@pytest.mark.parametrize(("wrapper", "string"), [("arguments", "false"), ("input", "true")])
def test_vllm_v32_wrapper_parameter_is_unwrapped(gen: int, wrapper: str, string: str) -> None:
    text = block(invoke("get_weather", (wrapper, string, '{"location":"Beijing"}')))
    assert args_of(run(text, gen, tools=[WEATHER], **T)) == [{"location": "Beijing"}]


UPDATE = tool("update", tags="array", meta="object")


@GENS
def test_vllm_v32_object_and_array_params(gen: int) -> None:
    text = block(invoke("update", ("tags", "false", '["a", "b"]'), ("meta", "false", '{"k": 1}')))
    assert args_of(run(text, gen, tools=[UPDATE], **T)) == [{"tags": ["a", "b"], "meta": {"k": 1}}]


@GENS
def test_vllm_v32_number_params(gen: int) -> None:
    text = block(invoke("measure", ("ratio", "false", "3.14"), ("whole", "false", "5.0")))
    args = args_of(run(text, gen, tools=[tool("measure", ratio="number", whole="number")], **T))
    assert args[0]["ratio"] == pytest.approx(3.14)
    assert args[0]["whole"] == 5


@GENS
def test_vllm_v32_multi_typed_schema(gen: int) -> None:
    schema = tool(
        "set_val", count={"type": ["integer", "null"]}, label={"type": ["string", "null"]}
    )
    text = block(invoke("set_val", ("count", "false", "42"), ("label", "false", "hello")))
    assert args_of(run(text, gen, tools=[schema], **T)) == [{"count": 42, "label": "hello"}]
    text = block(invoke("set_val", ("count", "false", "null")))
    assert args_of(run(text, gen, tools=[schema], **T)) == [{"count": None}]


@GENS
def test_vllm_v32_conversion_fallbacks(gen: int) -> None:
    """test_streaming_matches_non_streaming_conversion_fallbacks (streaming == batch is what
    `run` checks)."""
    schema = tool(
        "coerce",
        union_value={"type": ["null", "string"]},
        bad_int="integer",
        nullable_string={"type": ["null", "string"]},
        null_string="string",
        whole_number="number",
    )
    text = block(
        invoke(
            "coerce",
            ("union_value", "false", "hello"),
            ("bad_int", "false", "abc"),
            ("nullable_string", "false", "null"),
            ("null_string", "false", "null"),
            ("whole_number", "false", "3.0"),
        )
    )
    assert args_of(run(text, gen, tools=[schema], **T)) == [
        {
            "union_value": "hello",
            "bad_int": "abc",
            "nullable_string": None,
            "null_string": "null",  # a declared string is the text as written (as vLLM)
            "whole_number": 3,
        }
    ]


@GENS
def test_vllm_v32_no_schema_parses_json(gen: int) -> None:
    text = block(invoke("unknown_fn", ("count", "false", "42"), ("flag", "false", "true")))
    assert args_of(run(text, gen, **T)) == [{"count": 42, "flag": True}]


# --- [vllm-v32] streaming ------------------------------------------------------------------


@GENS
def test_vllm_v32_streaming_plain_content(gen: int) -> None:
    got = deltas(lines("Hello, world!"), gen, **T)
    assert "".join(d.content or "" for _, d in got) == "Hello, world!"
    assert all(not d.tool_calls for _, d in got)


@GENS
@pytest.mark.parametrize("split", ["lines", 1, 5, 7, 10])
def test_vllm_v32_streaming_shapes(gen: int, split: str | int) -> None:
    """test_single_tool_streaming, _chunked_stream_interval, test_multiple_tools_(chunked),
    test_content_before_tool_(call_streaming|chunked), test_no_marker_leak_*."""
    text = "Thinking... " + block(
        invoke("func_a", ("p", "true", "v1")), invoke("func_b", ("q", "true", "v2"))
    )
    pieces = lines(text) if split == "lines" else chunked(text, int(split))
    got = deltas(pieces, gen, **T)
    content = "".join(d.content or "" for _, d in got)
    assert content == "Thinking..."  # no marker fragment leaks (BLANKS: no trailing blank)
    names = {c.index: c.name for _, d in got for c in d.tool_calls if c.name}
    assert names == {0: "func_a", 1: "func_b"}
    by_index = {
        i: "".join(c.arguments or "" for _, d in got for c in d.tool_calls if c.index == i)
        for i in (0, 1)
    }
    assert [json.loads(by_index[0]), json.loads(by_index[1])] == [{"p": "v1"}, {"q": "v2"}]
    ids = [c.id for _, d in got for c in d.tool_calls if c.id]
    assert len(ids) == len(set(ids)) == 2


@GENS
def test_vllm_v32_no_marker_leak_all_split_points(gen: int) -> None:
    text = build("fn", {"k": "v"})
    for size in range(1, len(TS) + 2):
        msg = stream(chunked(text, size), generation=gen, **T)
        assert (msg.content, calls(msg)) == (None, [("fn", {"k": "v"})]), size


@GENS
def test_vllm_v32_false_partial_marker_is_content(gen: int) -> None:
    text = f"<{B}DSM some regular text"
    assert stream(chunked(text, 3), generation=gen, **T).content == text
    assert run(text, gen, **T).content == text


@GENS
def test_vllm_v32_streaming_type_conversion(gen: int) -> None:
    text = block(invoke("add", ("x", "false", "3"), ("y", "false", "4")))
    msg = stream(lines(text), generation=gen, tools=[tool("add", x="integer", y="integer")], **T)
    assert args_of(msg) == [{"x": 3, "y": 4}]


@GENS
def test_vllm_v32_empty_arguments_streaming(gen: int) -> None:
    msg = stream(lines(f'{TS}\n{INV}get_time">\n{IE}\n{TE}'), generation=gen, **T)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_time", "{}")]


def test_vllm_v32_emits_arguments_before_invoke_completes() -> None:
    # V2 only: V1 sends a call whole at the jail's end (docs/parsers.md "V1 and V2").
    partial = f'{TS}\n{INV}fn">\n{param("k", "val")}\n'
    got = deltas(lines(partial), 2, **T)
    before_end = "".join(
        c.arguments or "" for i, d in got if i < len(lines(partial)) for c in d.tool_calls
    )
    assert before_end.startswith('{"k"')


def test_vllm_v32_long_string_argument_streams_before_close() -> None:
    body = "A" * 4096
    chunks = [
        f'{TS}\n{INV}emit">\n{PS}text" string="true">',
        *chunked(body, 32),
        f"{PE}\n{IE}\n{TE}",
    ]
    got = deltas(chunks, 2, tools=[tool("emit", text="string")], **T)
    streaming = {i for i, d in got for c in d.tool_calls if c.arguments and 0 < i < len(chunks) - 1}
    assert len(streaming) > 1
    args = "".join(c.arguments or "" for _, d in got for c in d.tool_calls)
    assert json.loads(args) == {"text": body}


@GENS
def test_vllm_v32_delimiters_as_plain_text(gen: int) -> None:
    text = block(invoke("get_weather", ("location", "true", "Tokyo")))
    msg = run(text, gen, **T)
    assert (msg.content, calls(msg)) == (None, [("get_weather", {"location": "Tokyo"})])
    msg = run("Here is the weather: " + text, gen, **T)
    assert msg.content == "Here is the weather:"  # BLANKS


# --- [vllm-v32-use] --------------------------------------------------------------------------

HANGZHOU = [("location", "true", "Hangzhou"), ("date", "true", "2024-01-16")]


@GENS
def test_vllm_v32_use_two_calls_distinct_ids(gen: int) -> None:
    text = (
        f"{TS}\n"
        + invoke("get_weather", *HANGZHOU)
        + "\n"
        + invoke("get_weather", ("location", "true", "Beijing"), ("date", "true", "2024-01-16"))
        + f"\n{TE}"
    )
    msg = run(text, gen, **T)
    assert msg.content is None
    assert args_of(msg) == [
        {"location": "Hangzhou", "date": "2024-01-16"},
        {"location": "Beijing", "date": "2024-01-16"},
    ]
    assert msg.tool_calls[0].id != msg.tool_calls[1].id


@GENS
def test_vllm_v32_use_end_of_sentence_token_is_markup(gen: int) -> None:
    # As vLLM (whose detokenizer drops it): the end-of-sentence token is a message-close
    # marker, markup, never content (docs/parsers.md "Content hygiene").
    eos = f"<{B}end\u2581of\u2581sentence{B}>"
    msg = run(f"{TS}\n" + invoke("get_weather", *HANGZHOU) + f"\n{TE}{eos}", gen, **T)
    assert (msg.content, args_of(msg)) == (None, [{"location": "Hangzhou", "date": "2024-01-16"}])


@GENS
@pytest.mark.parametrize(
    "chunks",
    [
        [
            f"<{B}DSML",
            f"{B}tool_calls>",
            f'\n{INV}get_current_weather">',
            "\n" + param("location", "北京"),
            "\n" + param("time", "2025-03-21"),
            f"\n{IE}",
            TE,
        ],
        [
            TS,
            f'{INV}get_current_weather">',
            param("location", "北京"),
            param("time", "2025-03-21"),
            IE,
            f'{INV}get_current_weather">',
            param("location", "北京"),
            IE,
            f" {TE}",
        ],
    ],
    ids=["split-start-token", "no-newlines-blank-before-close"],
)
def test_vllm_v32_use_incomplete_chunks(gen: int, chunks: list[str]) -> None:
    msg = streamed(chunks, gen, **T)
    assert msg.content is None
    assert args_of(msg)[0] == {"location": "北京", "time": "2025-03-21"}
    n_calls = sum(c.count(IE) for c in chunks)
    assert [c.name for c in msg.tool_calls] == ["get_current_weather"] * n_calls


# --- [vllm-v4-reasoning] ---------------------------------------------------------------------


@GENS
def test_vllm_v4_reasoning_tool_call_start_ends_reasoning(gen: int) -> None:
    call = f'{TS}\n{INV}read_file">\n{param("path", "/tmp/example.lean")}\n{IE}\n{TE}'
    msg = run(f"Let me search.\n\n{call}", gen, **R)
    # BLANKS: vLLM's old reasoning parser keeps "\n\n"; its engine parser (below) strips them.
    assert msg.reasoning_content == "Let me search."
    assert (msg.content, calls(msg)) == (None, [("read_file", {"path": "/tmp/example.lean"})])


# --- [vllm-engine] test_deepseek_v4.py -----------------------------------------------------


@GENS
def test_engine_next_parameter_implicitly_closes_the_previous(gen: int) -> None:
    text = (
        f'{TS}{INV}get_weather">\n{PS}location" string="true">Paris '
        f'{PS}date" string="true">tomorrow{PE}{IE}{TE}'
    )
    # TRIM: vLLM keeps "Paris ".
    assert args_of(run(text, gen, **T)) == [{"location": "Paris", "date": "tomorrow"}]


@GENS
def test_engine_split_next_parameter_tag_is_buffered(gen: int) -> None:
    chunks = [
        TS,
        f'{INV}get_weather">\n',
        f'{PS}location" string="true">Paris a<b><{B}DSML{B}parameter',
        ' name="date" string="true">tomorrow',
        PE,
        IE,
        TE,
    ]
    msg = streamed(chunks, gen, **T)
    assert f"<{B}DSML{B}param" not in msg.tool_calls[0].arguments
    assert args_of(msg) == [{"location": "Paris a<b>", "date": "tomorrow"}]


@GENS
def test_engine_bare_think_end_not_leaked(gen: int) -> None:
    msg = run("</think>Here is the direct answer.", gen, **R)
    assert (msg.reasoning_content, msg.content) == (None, "Here is the direct answer.")


@GENS
def test_engine_duplicate_think_start_absorbed(gen: int) -> None:
    msg = run("<think>\nSome reasoning.\n</think>\nAnswer.", gen, thinking=True, **R)
    assert "Some reasoning" in (msg.reasoning_content or "")
    assert "<think>" not in (msg.reasoning_content or "") + (msg.content or "")
    assert (msg.content or "").strip() == "Answer."


@GENS
def test_engine_missing_invoke_end(gen: int) -> None:
    text = f'{TS}{INV}get_weather">\n{param("location", "NYC")}\n{TE}'
    assert calls(run(text, gen, **T)) == [("get_weather", {"location": "NYC"})]
    msg = run(text + "Done.", gen, **T)
    assert (msg.content, calls(msg)) == ("Done.", [("get_weather", {"location": "NYC"})])


@GENS
@pytest.mark.parametrize(
    ("controls", "starts_in_reasoning"),
    [
        ({}, True),
        ({"thinking": True}, True),
        ({"chat_template_kwargs": {"enable_thinking": True}}, True),
        ({"reasoning_effort": "high"}, True),
        ({"thinking": False}, False),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "none"}, False),
    ],
)
def test_engine_thinking_mode_initial_state(
    gen: int, controls: dict[str, Any], starts_in_reasoning: bool
) -> None:
    msg = run("I'll review the PR.", gen, request=controls, **R)
    expect = ("I'll review the PR.", None) if starts_in_reasoning else (None, "I'll review the PR.")
    assert (msg.reasoning_content, msg.content) == expect


@GENS
def test_engine_thinking_mode_reasoning_without_tags(gen: int) -> None:
    text = "\n\nLet me consider this carefully.\n</think>\nHere is the result."
    msg = run(text, gen, thinking=True, **R)
    assert "Let me consider" in (msg.reasoning_content or "")
    assert "Here is the result" in (msg.content or "")


@GENS
@pytest.mark.parametrize("lead", ["Let me look up the weather.\n\n", "Reasoning.\n\n\n"])
def test_engine_implicit_reasoning_end_strips_trailing_blanks(gen: int, lead: str) -> None:
    text = lead + block(invoke("get_weather", ("location", "true", "NYC")))
    msg = run(text, gen, thinking=True, **R)
    assert msg.reasoning_content == lead.strip()
    assert (msg.content, calls(msg)) == (None, [("get_weather", {"location": "NYC"})])


@GENS
def test_engine_explicit_think_then_tool_call(gen: int) -> None:
    text = "<think>Let me check the weather." + block(
        invoke("get_weather", ("location", "true", "NYC"))
    )
    msg = run(text, gen, **R)
    assert msg.reasoning_content == "Let me check the weather."
    assert calls(msg) == [("get_weather", {"location": "NYC"})]


@GENS
def test_engine_parallel_tools_after_implicit_end(gen: int) -> None:
    text = "I need both.\n\n" + block(
        invoke("get_weather", ("location", "true", "NYC")),
        invoke("get_time", ("timezone", "true", "EST")),
    )
    msg = run(text, gen, thinking=True, **R)
    assert [c.name for c in msg.tool_calls] == ["get_weather", "get_time"]


WEATHER2 = tool("get_weather", location="string", unit="string")
TIME = tool("get_time", timezone="string")


@GENS
@pytest.mark.parametrize(
    ("weather_args", "expected"),
    [
        ('{"location": "NYC", "unit": "celsius"}', {"location": "NYC", "unit": "celsius"}),
        ('{"location": "NYC"}', {"location": "NYC"}),
        ('{"unknown_key": "val"}', {"arguments": {"unknown_key": "val"}}),  # no match: kept
    ],
)
def test_engine_parallel_unwrapping_uses_each_tools_schema(
    gen: int, weather_args: str, expected: dict[str, Any]
) -> None:
    text = block(
        invoke("get_weather", ("arguments", "false", weather_args)),
        invoke("get_time", ("timezone", "true", "EST")),
    )
    msg = run(text, gen, tools=[WEATHER2, TIME], **T)
    assert args_of(msg) == [expected, {"timezone": "EST"}]


@GENS
def test_engine_no_unwrap_without_tools_or_when_declared(gen: int) -> None:
    text = block(invoke("get_weather", ("arguments", "false", '{"location": "Beijing"}')))
    assert args_of(run(text, gen, **T)) == [{"arguments": {"location": "Beijing"}}]
    declared = tool("func", arguments="string")
    text = block(invoke("func", ("arguments", "true", "some value")))
    assert args_of(run(text, gen, tools=[declared], **T)) == [{"arguments": "some value"}]


def test_engine_streamed_unwrapped_arguments_never_show_the_wrapper() -> None:
    chunks = [TS, invoke("get_weather", ("arguments", "false", '{"location": "NYC"}')), TE]
    got = deltas(chunks, 2, tools=[WEATHER], **T)
    streamed = "".join(c.arguments or "" for _, d in got for c in d.tool_calls)
    assert '"arguments"' not in streamed
    assert json.loads(streamed) == {"location": "NYC"}


@GENS
def test_engine_reasoning_then_block_at_all_chunk_sizes(gen: int) -> None:
    text = (
        "The user wants the current weather in Berlin.</think>\n\n"
        + TS
        + "\n"
        + invoke("get_weather", ("location", "true", "Berlin"), ("units", "true", "celsius"))
        + "\n"
        + TE
    )
    for size in (1, 2, 3, 5, len(text)):
        msg = streamed(chunked(text, size), gen, thinking=True, **R)
        assert msg.reasoning_content == "The user wants the current weather in Berlin."
        assert (msg.content, args_of(msg)) == (None, [{"location": "Berlin", "units": "celsius"}])


@GENS
def test_engine_default_thinking_tool_call_without_think_end(gen: int) -> None:
    text = (
        "The user wants the current weather in Berlin.\n\n"
        + TS
        + "\n"
        + invoke("get_weather", ("location", "true", "Berlin"), ("units", "true", "celsius"))
        + "\n"
        + TE
    )
    msg = run(text, gen, prompt="<｜User｜>weather?<｜Assistant｜><think>", **R)
    assert "The user wants" in (msg.reasoning_content or "")
    assert msg.content is None
    assert args_of(msg) == [{"location": "Berlin", "units": "celsius"}]


@GENS
def test_engine_nullable_union_string_parameter(gen: int) -> None:
    schema = tool("search", query={"type": ["string", "null"]})
    chunks = [
        f'{TS}\n{INV}search">\n{PS}query" string="true">',
        "not-null",
        " query text",
        f"{PE}\n{IE}\n{TE}",
    ]
    msg = stream(chunks, generation=gen, tools=[schema], **T)
    assert args_of(msg) == [{"query": "not-null query text"}]


# --- [vllm-engine] test_deepseek_v41.py (V2 only) -------------------------------------------

CALLS41 = (
    f'\n\n<{B}DSML{B} calls>\n<{B}DSML{B} invoke name="get_weather">\n'
    f'<{B}DSML{B} parameter name="city" string="true">杭州</{B}DSML{B} parameter>\n'
    f'<{B}DSML{B} parameter name="count" string="false">42</{B}DSML{B} parameter>\n'
    f'</{B}DSML{B} invoke>\n<{B}DSML{B} invoke name="add">\n'
    f'<{B}DSML{B} parameter name="x" string="false">1.5</{B}DSML{B} parameter>\n'
    f'<{B}DSML{B} parameter name="y" string="false">2.25</{B}DSML{B} parameter>\n'
    f"</{B}DSML{B} invoke>\n</{B}DSML{B} calls>"
)


@pytest.mark.parametrize("thinking", [False, True])
@pytest.mark.parametrize("size", [1, 7, 10000])
def test_v41_parallel_calls_across_chunks(thinking: bool, size: int) -> None:
    text = ("Plan.</think>" if thinking else "") + "Checking." + CALLS41
    prompt = "<｜Assistant｜>" + ("<think>" if thinking else "</think>")
    msg = streamed(chunked(text, size), 2, prompt=prompt, **V41)
    assert msg.route == "parser_v2"
    assert (msg.reasoning_content or "") == ("Plan." if thinking else "")
    assert (msg.content or "").strip() == "Checking."
    assert [c.name for c in msg.tool_calls] == ["get_weather", "add"]
    assert args_of(msg) == [{"city": "杭州", "count": 42}, {"x": 1.5, "y": 2.25}]


@pytest.mark.parametrize("thinking", [False, True])
def test_v41_complete_output(thinking: bool) -> None:
    text = ("Plan.</think>" if thinking else "") + CALLS41
    msg = parse(text, generation=2, **V41)  # batch without prompt: leading `</think>` rule
    assert (msg.reasoning_content or "") == ("Plan." if thinking else "")
    assert not (msg.content or "").strip()
    assert args_of(msg)[0] == {"city": "杭州", "count": 42}


@pytest.mark.parametrize(
    ("controls", "text", "reasoning", "content"),
    [
        ({"thinking": False}, "12", None, "12"),
        ({"chat_template_kwargs": {"enable_thinking": False}}, "12", None, "12"),
        # `thinking` outranks `reasoning_effort`: thinking is on, and without a prompt the output
        # starts where the template leaves it, inside `<think>`
        ({"thinking": True, "reasoning_effort": "none"}, "12", "12", None),
        ({"reasoning_effort": "none"}, "12", None, "12"),
        ({}, "</think>12", None, "12"),
        ({}, "Plan.</think>12", "Plan.", "12"),
    ],
)
def test_v41_reasoning_controls(
    controls: dict[str, Any], text: str, reasoning: str | None, content: str | None
) -> None:
    msg = parse(text, generation=2, request=controls, **V41)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


def test_v41_argument_conversion() -> None:
    t = f"<{B}DSML{B} "
    text = (
        f'{t}calls>{t}invoke name="f">'
        f'{t}parameter name="object" string="false">{{"a": [true, null]}}</{B}DSML{B} parameter>'
        f'{t}parameter name="bad" string="false">[broken</{B}DSML{B} parameter>'
        f'{t}parameter name="bare">7</{B}DSML{B} parameter>'  # no string attribute: JSON
        f'{t}parameter name="text" string="true">  a<b</{B}DSML{B} parameter>'
        f"</{B}DSML{B} invoke></{B}DSML{B} calls>"
    )
    # TRIM: vLLM keeps "  a<b".
    assert args_of(run(text, 2, **V41)) == [
        {"object": {"a": [True, None]}, "bad": "[broken", "bare": 7, "text": "a<b"}
    ]


def test_v41_marker_after_reasoning_text_is_a_call() -> None:
    """test_byte_fallback_inside_text_tool_marker_is_not_reasoning (text level)."""
    text = (
        f'中<{B}DSML{B} calls><{B}DSML{B} invoke name="emit">'
        f'<{B}DSML{B} parameter name="value" string="true">ok</{B}DSML{B} parameter>'
        f"</{B}DSML{B} invoke></{B}DSML{B} calls>"
    )
    msg = run(text, 2, prompt="<think>", **V41)
    assert (msg.reasoning_content, msg.content) == ("中", None)
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("emit", {"value": "ok"})
    ]


# --- [sglang] --------------------------------------------------------------------------------


@GENS
def test_sglang_non_json_string_false_value_streams_without_leak(gen: int) -> None:
    chunks = [
        f'{TS}\n{INV}write_note">\n',
        f'{PS}payload" string="false">Здра',
        "вствуйте, мир",
        "! Это тест",
        f"{PE}\n{IE}\n{TE}",
    ]
    note = tool("write_note", payload="object")
    got = deltas(chunks, gen, tools=[note], **T)
    assert all(f"{B}DSML{B}" not in (d.content or "") for _, d in got)
    args = "".join(c.arguments or "" for _, d in got for c in d.tool_calls)
    assert json.loads(args) == {"payload": "Здравствуйте, мир! Это тест"}


@GENS
def test_sglang_json_object_param_streams(gen: int) -> None:
    chunks = [
        f'{TS}\n{INV}write_note">\n',
        f'{PS}payload" string="false">{{"ci',
        'ty": "San',
        ' Francisco"}',
        f"{PE}\n{IE}\n{TE}",
    ]
    msg = stream(chunks, generation=gen, tools=[tool("write_note", payload="object")], **T)
    assert (msg.content, args_of(msg)) == (None, [{"payload": {"city": "San Francisco"}}])


# --- [dynamo] ------------------------------------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("location", "true", "San Francisco")], {"location": "San Francisco"}),
        (
            [("query", "true", "test query"), ("topn", "false", "10")],
            {"query": "test query", "topn": 10},
        ),
        (
            [("config", "false", '{"key": "value", "count": 42}')],
            {"config": {"key": "value", "count": 42}},
        ),
        ([("items", "false", "[1, 2, 3]")], {"items": [1, 2, 3]}),
        (
            [("enabled", "false", "true"), ("disabled", "false", "false")],
            {"enabled": True, "disabled": False},
        ),
        (
            [("integer", "false", "42"), ("float", "false", "2.7"), ("negative", "false", "-100")],
            {"integer": 42, "float": 2.7, "negative": -100},
        ),
        (
            [
                ("query", "true", "search agent benchmark 2024"),
                ("topn", "false", "10"),
                ("source", "true", "web"),
            ],
            {"query": "search agent benchmark 2024", "topn": 10, "source": "web"},
        ),
        (
            [("settings", "false", '{"timeout": 30, "retry": true, "endpoints": ["a", "b"]}')],
            {"settings": {"timeout": 30, "retry": True, "endpoints": ["a", "b"]}},
        ),
        ([("empty", "true", "")], {"empty": ""}),
        ([("value", "false", "null")], {"value": None}),
    ],
)
def test_dynamo_dsml_values(
    gen: int, params: list[tuple[str, str, str]], expected: dict[str, Any]
) -> None:
    text = f"{TS}\n" + invoke("f", *params) + f"\n{TE}"
    msg = run(text, gen, **T)
    assert (msg.content, args_of(msg)) == (None, [expected])


@GENS
def test_dynamo_multiple_calls_and_normal_text(gen: int) -> None:
    text = (
        "Here's the result: "
        + f"{TS}\n"
        + invoke("get_weather", ("location", "true", "Beijing"), ("date", "true", "2024-01-16"))
        + "\n"
        + invoke("get_weather", ("location", "true", "Hangzhou"), ("date", "true", "2024-01-16"))
        + f"\n{TE}"
    )
    msg = run(text, gen, **T)
    assert msg.content == "Here's the result:"
    assert [a["location"] for a in args_of(msg)] == ["Beijing", "Hangzhou"]


@GENS
def test_dynamo_fixture_single_call_without_newlines(gen: int) -> None:
    text = (
        TS
        + f'{INV}get_weather">'
        + param("location", "Paris")
        + param("days", "3", "false")
        + IE
        + TE
    )
    assert calls(run(text, gen, **T)) == [("get_weather", {"location": "Paris", "days": 3})]


@GENS
def test_dynamo_fixture_missing_end_token_recovers(gen: int) -> None:
    # Dynamo marks this KnownBroken (drops the call); the contract keeps every complete invoke
    # when the outer close is missing (docs/parsers.md DeepSeek V4).
    text = TS + f'{INV}get_weather">' + param("location", "Paris") + IE
    assert calls(run(text, gen, **T)) == [("get_weather", {"location": "Paris"})]


# --- [sglang] test_function_call_parser.py TestDeepSeekV32Detector (wrapper renamed) ---------

SPOT = tool("get_favorite_tourist_spot", city="string")
SEARCH = tool("search", query="string", topn="integer", source="string")
INTRO = "I'll help you with information about San Francisco and get its favorite tourist spot."


@GENS
def test_sglang_v32_indented_xml_format(gen: int) -> None:
    text = f"""{INTRO}\n\n
        {TS}\n
            {INV}get_favorite_tourist_spot">\n
                {param("city", "San Francisco")}\n
            {IE}\n
            {INV}search">
                {param("query", "WebNav benchmark")}
                {param("topn", "10", "false")}
                {param("source", "web")}
            {IE}
        {TE}
        """
    msg = run(text, gen, tools=[SPOT, SEARCH], **T)
    assert msg.content == INTRO  # BLANKS: the blanks around the block are layout
    assert calls(msg) == [
        ("get_favorite_tourist_spot", {"city": "San Francisco"}),
        ("search", {"query": "WebNav benchmark", "topn": 10, "source": "web"}),
    ]


@GENS
def test_sglang_v32_json_body_inside_invoke(gen: int) -> None:
    text = f"""{INTRO}

        {TS}
            {INV}get_favorite_tourist_spot">
            {{
                "city": "San Francisco"
            }}
        {IE}
            {INV}search">
            {{
                "query": "WebNav benchmark",
                "topn": 10,
                "source": "web"
            }}
        {IE}
        {TE}
        """
    msg = run(text, gen, tools=[SPOT, SEARCH], **T)
    assert msg.content == INTRO
    assert calls(msg) == [
        ("get_favorite_tourist_spot", {"city": "San Francisco"}),
        ("search", {"query": "WebNav benchmark", "topn": 10, "source": "web"}),
    ]


@GENS
def test_sglang_v32_streaming_xml_format(gen: int) -> None:
    text = f"""{TS}
            {INV}get_favorite_tourist_spot">
                {param("city", "San Francisco")}
                {param("another_city", "London")}
                {param("topn", "10", "false")}
                {param("obj", '{"name": "John", "age": 30}', "false")}
            {IE}
        {TE}"""
    msg = run(text, gen, tools=[SPOT, SEARCH], **T)
    assert calls(msg) == [
        (
            "get_favorite_tourist_spot",
            {
                "city": "San Francisco",
                "another_city": "London",
                "topn": 10,
                "obj": {"name": "John", "age": 30},
            },
        )
    ]


@GENS
@pytest.mark.parametrize("body", ["\n", "\n\n"])
def test_sglang_v32_no_parameters(gen: int, body: str) -> None:
    text = f'Let me get the current date for you.\n\n{TS}\n{INV}get_date">{body}{IE}\n{TE}'
    msg = run(text, gen, tools=[tool("get_date")], **T)
    assert msg.content == "Let me get the current date for you."
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_date", "{}")]


@GENS
def test_json_body_breaking_is_handled_like_other_cut_calls(gen: int) -> None:
    text = f'{TS}{INV}f">{{"a": 1, oops'
    msg = run(text, gen, **T)
    if gen == 1:  # the jail never closed: its text is content, verbatim
        assert (msg.content, msg.tool_calls) == (text, [])
    else:  # V2 streamed the call: never repaired (its arguments as sent), the rest is content
        assert (msg.content, msg.tool_calls[0].arguments) == ("oops", '{"a":1')


# --- [vllm-engine] test_deepseek_v4_malformed_recovery.py -----------------------------------

SEOUL = tool("get_weather", city="string")
ORPHAN = f'{INV}get_weather">\n{param("city", "Seoul")}\n{IE}'
NO_THINK = {**R, "thinking": False}


@GENS
def test_recovery_invoke_without_block_start_default_thinking(gen: int) -> None:
    msg = run(ORPHAN + TE, gen, tools=[SEOUL], **R)
    assert (msg.reasoning_content, msg.content) == (None, None)
    assert calls(msg) == [("get_weather", {"city": "Seoul"})]


@GENS
def test_recovery_corrupted_block_start(gen: int) -> None:
    msg = run(f"<{B}DSML{B}toolcalls>\n" + ORPHAN + "\n" + TE, gen, tools=[SEOUL], **R)
    assert calls(msg) == [("get_weather", {"city": "Seoul"})]


@GENS
@pytest.mark.parametrize(
    ("text", "tools"),
    [
        (ORPHAN.replace("get_weather", "not_declared") + TE, [SEOUL]),  # undeclared tool
        (ORPHAN + TE, []),  # no tools in the request
        (f"Docs quote {INV}get_wea", [SEOUL]),  # truncated candidate
        (f'{INV}get_weather">\n{param("city", "Seoul")}', [SEOUL]),  # no invoke end
    ],
    ids=["undeclared", "no_tools", "truncated", "no_invoke_end"],
)
def test_recovery_candidates_that_stay_content(gen: int, text: str, tools: list[Any]) -> None:
    msg = run(text, gen, tools=tools, **NO_THINK)
    if gen == 2 and text.endswith(TE):
        # V2 read the invoke as text (its close pairs its opener); the block close has no
        # block open: an unpaired close is markup (docs/parsers.md "Content hygiene")
        text = text[: -len(TE)]
    assert (msg.content, msg.tool_calls) == (text, [])


@GENS
def test_recovery_streaming_after_split_marker(gen: int) -> None:
    chunks = [
        "Checking.\n",
        f"<{B}DSML",
        f'{B}invoke name="get_weather">',
        f"\n{param('city', 'Seoul')}\n",
        IE,
        TE,
    ]
    msg = streamed(chunks, gen, tools=[SEOUL], **NO_THINK)
    assert msg.content == "Checking."  # BLANKS (vLLM: "Checking.\n")
    assert calls(msg) == [("get_weather", {"city": "Seoul"})]


@GENS
def test_recovered_invoke_goes_out_whole_at_its_close(gen: int) -> None:
    # Not known to be a call before its close: no fragment before `</｜DSML｜invoke>`.
    chunks = [f'{INV}get_weather">\n', param("city", "Seoul"), "\n", IE]
    got = deltas(chunks, gen, tools=[SEOUL], **NO_THINK)
    # V1's jail runs to the block close (missing here): the call goes out at the end.
    assert {i for i, d in got if d.tool_calls} == ({3} if gen == 2 else {len(chunks)})


def test_recovery_tool_choice_none_v1_keeps_text() -> None:
    # V1 does no tool parsing under `none`; V2 removes recognised call markup (parser-selection.md),
    # where vLLM keeps the text (docs/parsers.md, DeepSeek conformance notes).
    text = ORPHAN + TE
    v1 = run(text, 1, tools=[SEOUL], tool_choice="none", **NO_THINK)
    assert (v1.content, v1.tool_calls) == (text, [])
    v2 = run(text, 2, tools=[SEOUL], tool_choice="none", **NO_THINK)
    assert (v2.content, v2.tool_calls) == (None, [])


# --- [vllm-engine] test_dsml_finite.py -----------------------------------------------------


def _reject_constant(value: str) -> Any:
    raise AssertionError(f"arguments contain a non-JSON constant: {value}")


@GENS
@pytest.mark.parametrize("attr", [' string="false"', ""])
def test_nonfinite_parameters_keep_their_literals(gen: int, attr: str) -> None:
    cases = [
        ("overflow", "1e999", "1e999", "number"),
        ("negative", "-1e999", "-1e999", "number"),
        ("nan", "NaN", "NaN", "number"),
        ("array", "[1e999]", "[1e999]", "array"),
        ("object", '{"label":">","x":NaN}', '{"label":">","x":NaN}', "object"),
        ("finite", "1.5", 1.5, "number"),
        ("large", "123456789012345678901234567890", 123456789012345678901234567890, "integer"),
        # a declared string is the text as written, quotes included
        ("quoted", '"Infinity"', '"Infinity"', "string"),
    ]
    body = "".join(f'{PS}{name}"{attr}>{value}{PE}' for name, value, _, _ in cases)
    schema = tool("emit", **{name: kind for name, _, _, kind in cases})
    msg = run(f'{TS}{INV}emit">{body}{IE}{TE}', gen, tools=[schema], **T)
    arguments = json.loads(msg.tool_calls[0].arguments, parse_constant=_reject_constant)
    assert arguments == {name: expected for name, _, expected, _ in cases}


@GENS
@pytest.mark.parametrize("attr", [' string="false"', ' string="true"', ""])
def test_wrapper_with_nonfinite_json_is_not_unwrapped(gen: int, attr: str) -> None:
    value = '{"x":[1e999]}'
    text = f'{TS}{INV}emit">{PS}arguments"{attr}>{value}{PE}{IE}{TE}'
    msg = run(text, gen, tools=[tool("emit", x="array")], **T)
    assert json.loads(msg.tool_calls[0].arguments, parse_constant=_reject_constant) == {
        "arguments": value
    }


def test_v41_recovers_an_invoke_without_its_block_start() -> None:
    t = f"<{B}DSML{B} "
    text = (
        f'Sure.{t}invoke name="emit">{t}parameter name="value" string="true">ok'
        f"</{B}DSML{B} parameter></{B}DSML{B} invoke></{B}DSML{B} calls>"
    )
    emit = tool("emit", value="string")
    msg = run(text, 2, tools=[emit], prompt="</think>", **V41)
    assert (msg.content, calls(msg)) == ("Sure.", [("emit", {"value": "ok"})])
    msg = run(text, 2, prompt="</think>", **V41)  # no declared tools: text
    # (the unpaired block close is markup: docs/parsers.md "Content hygiene")
    assert (msg.content, msg.tool_calls) == (text.removesuffix(f"</{B}DSML{B} calls>"), [])
