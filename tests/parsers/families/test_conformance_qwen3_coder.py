"""Conformance: Qwen3-Coder XML calls (`qwen3_coder`) against other implementations' tests.

Ported from vLLM `tests/tool_parsers/test_qwen3coder_tool_parser.py`,
`test_qwen3_xml_coder_shared.py` and `test_qwen36_bugs.py` (VLLM), SGLang
`test_qwen3_coder_detector.py` (SGLANG) and Dynamo
`lib/parsers/src/tool_calling/test_cases/fixtures/qwen3_coder.rs` (DYNAMO). Token streaming
becomes character chunks (every case also goes through `parser_check.run`: batch, per-character
and 3-way streaming agree). Adaptations cite `docs/parsers.md`.
"""

from __future__ import annotations

import json

import pytest
from conformance_check import feed, sized
from parser_check import calls, run, tool

C = {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"}
GENS = pytest.mark.parametrize("gen", [1, 2])
WEATHER = tool(
    "get_current_weather",
    city="string",
    state="string",
    unit={"type": "string", "enum": ["fahrenheit", "celsius"]},
)
AREA = tool("calculate_area", shape="string", dimensions="object", precision="integer")
TOOLS = [WEATHER, AREA]
WRITE_FILE = tool("write_file", path="string", content="string")


def param(key: str, value: str) -> str:
    return f"<parameter={key}>\n{value}\n</parameter>\n"


def wrapped(name: str, *params: str) -> str:
    return f"<tool_call>\n<function={name}>\n{''.join(params)}</function>\n</tool_call>"


DALLAS = wrapped(
    "get_current_weather",
    param("city", "Dallas"),
    param("state", "TX"),
    param("unit", "fahrenheit"),
)
ORLANDO = wrapped(
    "get_current_weather", param("city", "Orlando"), param("state", "FL"), param("unit", "celsius")
)
DALLAS_ARGS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
RECT = wrapped(
    "calculate_area",
    param("shape", "rectangle"),
    param("dimensions", '{"width": 10, \n "height": 20}'),
    param("precision", "2"),
)
CIRCLE = "Let me calculate that area for you." + wrapped(
    "calculate_area",
    param("shape", "circle"),
    param("dimensions", '{"radius": 15.5}'),
    param("precision", "3"),
)

# (model output, expected calls, expected content) - vLLM's extract/streaming table
EXTRACT = [
    ("This is a test without tools", [], "This is a test without tools"),
    (DALLAS, [("get_current_weather", DALLAS_ARGS)], None),
    (
        "Sure! Let me check the weather for you." + DALLAS,
        [("get_current_weather", DALLAS_ARGS)],
        "Sure! Let me check the weather for you.",
    ),
    (
        RECT,
        [
            (
                "calculate_area",
                {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2},
            )
        ],
        None,
    ),
    (
        # vLLM's shared table accepts None or "\n" between parallel calls: we give None
        # (docs/parsers.md "Blanks around calls")
        DALLAS + "\n" + ORLANDO,
        [
            ("get_current_weather", DALLAS_ARGS),
            ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "celsius"}),
        ],
        None,
    ),
    (
        CIRCLE,
        [
            (
                "calculate_area",
                {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3},
            )
        ],
        "Let me calculate that area for you.",
    ),
]
EXTRACT_IDS = ["no_tools", "single", "with_content", "multiline_param", "parallel", "typed"]


# --- VLLM ------------------------------------------------------------------------------


@GENS
@pytest.mark.parametrize(("text", "expected", "content"), EXTRACT, ids=EXTRACT_IDS)
def test_vllm_extract_tool_calls(gen: int, text: str, expected: list, content: str | None) -> None:
    msg = run(text, gen, tools=TOOLS, **C)
    assert calls(msg) == expected
    assert msg.content == content
    assert msg.finish_reason == ("tool_calls" if expected else "stop")


@GENS
@pytest.mark.parametrize(("text", "expected", "content"), EXTRACT, ids=EXTRACT_IDS)
@pytest.mark.parametrize("size", [1, 4, 7])
def test_vllm_extract_tool_calls_streaming(
    gen: int, text: str, expected: list, content: str | None, size: int
) -> None:
    s = feed(sized(text, size), gen, tools=TOOLS, **C)
    assert s.content == (content or "")
    assert [(s.names[i], s.call_args(i)) for i in sorted(s.names)] == expected
    assert all(s.ids[i] for i in s.names)


@GENS
def test_vllm_fallback_without_tool_call_tags(gen: int) -> None:
    text = (
        "<function=get_current_weather>\n"
        + param("city", "Dallas")
        + param("state", "TX")
        + "</function>"
    )
    msg = run(text, gen, tools=TOOLS, **C)
    assert calls(msg) == [("get_current_weather", {"city": "Dallas", "state": "TX"})]


@GENS
def test_vllm_missing_opening_tag_with_stray_closer(gen: int) -> None:
    text = (
        "I'll check the weather for you.\n\n<function=get_current_weather>\n"
        + param("city", "Dallas")
        + param("state", "TX")
        + param("unit", "fahrenheit")
        + "</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=TOOLS, **C)
    assert calls(msg) == [("get_current_weather", DALLAS_ARGS)]
    # the stray `</tool_call>` closes the bare block: it is markup, not content
    assert msg.content == "I'll check the weather for you."


@GENS
def test_vllm_type_conversion(gen: int) -> None:
    types = tool(
        "test_types",
        int_param="integer",
        float_param="float",
        bool_param="boolean",
        str_param="string",
        obj_param="object",
    )
    text = wrapped(
        "test_types",
        param("int_param", "42"),
        param("float_param", "3.14"),
        param("bool_param", "true"),
        param("str_param", "hello world"),
        param("obj_param", '{"key": "value"}'),
    )
    assert calls(run(text, gen, tools=[types], **C)) == [
        (
            "test_types",
            {
                "int_param": 42,
                "float_param": 3.14,
                "bool_param": True,
                "str_param": "hello world",
                "obj_param": {"key": "value"},
            },
        )
    ]


ANYOF = tool(
    "test_anyof",
    anyof_int={"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    anyof_str={"anyOf": [{"type": "string"}, {"type": "null"}]},
    anyof_array={"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
    anyof_obj={"anyOf": [{"type": "object"}, {"type": "null"}]},
    type_as_array={"type": ["integer", "null"]},
    multi_non_null={"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
)


@GENS
def test_vllm_anyof_type_conversion(gen: int) -> None:
    text = wrapped(
        "test_anyof",
        param("anyof_int", "5"),
        param("anyof_str", "hello"),
        param("anyof_array", '["a", "b", "c"]'),
        param("anyof_obj", '{"key": "value"}'),
        param("type_as_array", "42"),
        param("multi_non_null", "some text"),
    )
    args = calls(run(text, gen, tools=[ANYOF], **C))[0][1]
    assert args == {
        "anyof_int": 5,
        "anyof_str": "hello",
        "anyof_array": ["a", "b", "c"],
        "anyof_obj": {"key": "value"},
        "type_as_array": 42,
        "multi_non_null": "some text",
    }
    assert isinstance(args["anyof_int"], int) and isinstance(args["type_as_array"], int)


@GENS
def test_vllm_anyof_streaming(gen: int) -> None:
    search = tool(
        "search_web",
        query={"anyOf": [{"type": "string"}, {"type": "null"}]},
        count={"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
        verbose={"anyOf": [{"type": "boolean"}, {"type": "null"}]},
    )
    text = wrapped(
        "search_web",
        param("query", "vllm tool parser"),
        param("count", "10"),
        param("verbose", "true"),
    )
    s = feed(list(text), gen, tools=[search], **C)
    assert s.names == {0: "search_web"}
    assert s.call_args(0) == {"query": "vllm tool parser", "count": 10, "verbose": True}


MISSING_PARAM_CLOSE = (
    "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n"
    "<parameter=city>\nDallas\n<parameter=state>\nTX\n</parameter>\n"
    "<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>"
)


@GENS
@pytest.mark.parametrize("size", [1, 5, 1000])
def test_vllm_missing_closing_parameter_tag(gen: int, size: int) -> None:
    msg = run(MISSING_PARAM_CLOSE, gen, tools=TOOLS, **C)
    assert calls(msg) == [("get_current_weather", DALLAS_ARGS)]
    assert msg.content == "Let me check the weather for you:"
    s = feed(sized(MISSING_PARAM_CLOSE, size), gen, tools=TOOLS, **C)
    assert s.call_args(0) == DALLAS_ARGS


def test_vllm_streaming_is_incremental_v2() -> None:
    text = "I'll check the weather." + wrapped(
        "get_current_weather", param("city", "Dallas"), param("state", "TX")
    )
    s = feed(list(text), 2, tools=TOOLS, **C)
    deltas = [d for ds in s.deltas for d in ds]
    assert deltas[0].content and not deltas[0].tool_calls
    header = next(tc for d in deltas for tc in d.tool_calls if tc.id)
    assert header.name == "get_current_weather"
    assert header.arguments in (None, "", "{")
    assert len(s.fragments[0]) > 1  # V2 streams the arguments (principle 4)
    assert s.call_args(0) == {"city": "Dallas", "state": "TX"}


@GENS
def test_vllm_malformed_function_header_does_not_crash(gen: int) -> None:
    text = (
        "<tool_call>\n<function=get_current_weather\n"
        "<parameter=city>Dallas</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=TOOLS, **C)
    # a header without `>` is not a call: its text is content, verbatim (principle 1)
    assert (msg.tool_calls, msg.content) == ([], text)


@GENS
def test_vllm_broken_call_filtered_next_call_kept(gen: int) -> None:
    bad = "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>"
    text = (
        bad + "\n<tool_call>\n<function=get_current_weather>\n"
        "<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=TOOLS, **C)
    assert calls(msg) == [("get_current_weather", {"city": "Dallas", "state": "TX"})]
    assert msg.content == bad  # lossless (principle 1); vLLM drops the broken block


ANYOF_OBJ = tool("update_record", data={"anyOf": [{"type": "object"}, {"type": "null"}]})


@GENS
def test_vllm_anyof_object_not_double_encoded(gen: int) -> None:
    text = (
        "<tool_call>\n<function=update_record>\n"
        '<parameter=data>{"key": "value", "count": 42}</parameter>\n</function>\n</tool_call>'
    )
    assert calls(run(text, gen, tools=[ANYOF_OBJ], **C)) == [
        ("update_record", {"data": {"key": "value", "count": 42}})
    ]
    chunks = [
        "<tool_call>",
        "\n<function=update_record>",
        '\n<parameter=data>{"key": "value", "count": 42}</parameter>',
        "\n</function>",
        "\n</tool_call>",
    ]
    assert feed(chunks, gen, tools=[ANYOF_OBJ], **C).call_args(0) == {
        "data": {"key": "value", "count": 42}
    }


@GENS
def test_vllm_multi_param_single_chunk(gen: int) -> None:
    chunks = [
        "<tool_call>",
        "\n<function=get_current_weather>",
        "\n",
        "<parameter=city>\nDallas\n</parameter>"
        "\n<parameter=state>\nTX\n</parameter>"
        "\n<parameter=unit>\nfahrenheit\n</parameter>",
        "\n</function>",
        "\n</tool_call>",
    ]
    s = feed(chunks, gen, tools=TOOLS, **C)
    assert (len(s.names), s.call_args(0)) == (1, DALLAS_ARGS)


@GENS
def test_vllm_no_double_serialization_of_strings(gen: int) -> None:
    text = (
        "<tool_call>\n<function=greet>\n<parameter=message>hello world</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=[tool("greet", message="string")], **C)
    raw = msg.tool_calls[0].arguments
    assert json.loads(raw) == {"message": "hello world"}
    assert '\\"hello world\\"' not in raw


@GENS
def test_vllm_object_as_python_repr(gen: int) -> None:
    text = wrapped("test_types", param("obj_param", "{'key': 'value'}"))
    msg = run(text, gen, tools=[tool("test_types", obj_param="object")], **C)
    assert calls(msg) == [("test_types", {"obj_param": {"key": "value"}})]


@GENS
def test_vllm_string_typed_null_stays_a_string(gen: int) -> None:
    text = (
        "<tool_call>\n<function=search>\n<parameter=query>null</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=[tool("search", query="string")], **C)
    assert calls(msg) == [("search", {"query": "null"})]


@GENS
@pytest.mark.parametrize(
    ("schema", "written", "value"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "42", "42"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "42", 42),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "None", None),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "null", None),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "None", None),
    ],
)
def test_vllm_nullable_values(gen: int, schema: dict, written: str, value: object) -> None:
    text = (
        f"<tool_call>\n<function=f>\n<parameter=v>{written}</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=[tool("f", v=schema)], **C)
    assert calls(msg) == [("f", {"v": value})]


@GENS
def test_vllm_double_encoded_object(gen: int) -> None:
    text = (
        "<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n"
        "<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n</tool_call>\n"
    )
    process = tool("process", data="object")
    process["function"]["parameters"]["properties"]["name"] = {"type": "string"}
    msg = run(text, gen, tools=[process], **C)
    assert calls(msg) == [("process", {"name": "hello", "data": {"key": "value", "n": 1}})]
    assert msg.content is None


@GENS
def test_vllm_array_with_json_literals(gen: int) -> None:
    text = wrapped("pick", param("items", '["a", "b", 1, true]'))
    assert calls(run(text, gen, tools=[tool("pick", items="array")], **C)) == [
        ("pick", {"items": ["a", "b", 1, True]})
    ]


TWO_CALLS = (
    wrapped("get_weather", param("city", "Paris"))
    + "\n"
    + wrapped("get_weather", param("city", "London"))
)


@GENS
def test_vllm_two_calls_in_one_chunk(gen: int) -> None:
    s = feed([TWO_CALLS], gen, tools=[tool("get_weather", city="string")], **C)
    assert [s.call_args(0), s.call_args(1)] == [{"city": "Paris"}, {"city": "London"}]


@GENS
def test_vllm_two_calls_and_trailing_text_in_one_chunk(gen: int) -> None:
    s = feed([TWO_CALLS + "\nAll done!"], gen, tools=[tool("get_weather", city="string")], **C)
    assert len(s.names) == 2
    assert "All done!" in s.content


@GENS
def test_vllm_trailing_text_with_final_close(gen: int) -> None:
    chunks = [
        "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>",
        "\n</tool_call>\nI hope this helps!",
    ]
    s = feed(chunks, gen, tools=[tool("get_weather", city="string")], **C)
    assert len(s.names) == 1
    assert s.content == "\nI hope this helps!"


def test_vllm_speculative_delta_keeps_parameters_v2() -> None:
    s = feed(
        [
            "<tool_call>\n<function=test>\n",
            "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        ],
        2,
        **C,
    )
    second = "".join(tc.arguments or "" for d in s.deltas[1] for tc in d.tool_calls)
    assert "Paris" in second
    assert s.call_args(0) == {"city": "Paris"}


@GENS
def test_vllm_jinja_phantom_call_is_not_a_call(gen: int) -> None:
    phantom = (
        "<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    real = wrapped("write_file", param("path", "out.txt"), param("content", "hello"))
    msg = run(phantom + "\n\n" + real, gen, tools=[WRITE_FILE], **C)
    assert [c.name for c in msg.tool_calls] == ["write_file"]
    assert msg.content == phantom  # the phantom's text is content (principle 1)


@GENS
def test_vllm_inline_empty_tool_call_keeps_narrative(gen: int) -> None:
    text = (
        "I'll show: <tool_call>example</tool_call>. Now real:\n"
        "<tool_call>\n<function=log>\n<parameter=msg>\nhi\n</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, tools=[tool("log", msg="string")], **C)
    assert calls(msg) == [("log", {"msg": "hi"})]
    assert msg.content == "I'll show: <tool_call>example</tool_call>. Now real:"


# --- SGLANG ------------------------------------------------------------------------------

SG_TOOLS = [
    tool(
        "get_current_weather",
        location="string",
        unit={"type": "string", "enum": ["celsius", "fahrenheit"]},
        days="integer",
    ),
    tool("sql_interpreter", query="string", dry_run="boolean"),
    tool(
        "TodoWrite",
        todos={
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"content": {"type": "string"}, "status": {"type": "string"}},
            },
        },
    ),
    tool(
        "get_current_time",
        cities={"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
    ),
]


@GENS
def test_sglang_text_prefix_and_multiple_calls(gen: int) -> None:
    one = (
        "<tool_call>\n<function=get_current_weather>\n"
        "<parameter=location>New York</parameter>\n</function>\n</tool_call>"
    )
    msg = run("Let me check the weather for you.\n\n" + one, gen, tools=SG_TOOLS, **C)
    assert msg.content == "Let me check the weather for you."
    two = (
        one + "\n<tool_call>\n<function=sql_interpreter>\n"
        "<parameter=query>SELECT * FROM users</parameter>\n"
        "<parameter=dry_run>True</parameter>\n</function>\n</tool_call>"
    )
    assert calls(run(two, gen, tools=SG_TOOLS, **C)) == [
        ("get_current_weather", {"location": "New York"}),
        ("sql_interpreter", {"query": "SELECT * FROM users", "dry_run": True}),
    ]


@GENS
def test_sglang_streaming_tag_chunks(gen: int) -> None:
    chunks = [
        "<tool_call>",
        "<function=get_current_weather>",
        "<parameter=location>",
        "Boston",
        "</parameter>",
        "<parameter=unit>celsius</parameter>",
        "</function>",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=SG_TOOLS, **C)
    assert s.call_args(0) == {"location": "Boston", "unit": "celsius"}
    chunks = [
        "Let me ",
        "help you.\n\n",
        "<tool_call>",
        "<function=get_current_weather>",
        "<parameter=location>Paris</parameter>",
        "</function>",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=SG_TOOLS, **C)
    assert (s.content, s.call_args(0)) == ("Let me help you.", {"location": "Paris"})


@GENS
def test_sglang_integer_boolean_and_array_of_objects(gen: int) -> None:
    text = (
        "<tool_call>\n<function=get_current_weather>\n<parameter=location>Tokyo</parameter>\n"
        "<parameter=days>5</parameter>\n</function>\n</tool_call>"
    )
    assert calls(run(text, gen, tools=SG_TOOLS, **C)) == [
        ("get_current_weather", {"location": "Tokyo", "days": 5})
    ]
    todos = wrapped(
        "TodoWrite",
        param(
            "todos",
            '[\n  {"content": "Buy groceries", "status": "pending"},\n'
            '  {"content": "Finish report", "status": "completed"}\n]',
        ),
    )
    assert calls(run(todos, gen, tools=SG_TOOLS, **C)) == [
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "Buy groceries", "status": "pending"},
                    {"content": "Finish report", "status": "completed"},
                ]
            },
        )
    ]


@GENS
@pytest.mark.parametrize(("written", "value"), [('["NYC"]', ["NYC"]), ("null", None)])
def test_sglang_anyof_array(gen: int, written: str, value: object) -> None:
    text = wrapped("get_current_time", param("cities", written))
    assert calls(run(text, gen, tools=SG_TOOLS, **C)) == [("get_current_time", {"cities": value})]
    chunks = [
        "<tool_call>",
        "<function=get_current_time>",
        "<parameter=cities>",
        written,
        "</parameter>",
        "</function>",
        "</tool_call>",
    ]
    assert feed(chunks, gen, tools=SG_TOOLS, **C).call_args(0) == {"cities": value}


@GENS
def test_sglang_empty_value_and_special_characters(gen: int) -> None:
    empty = (
        "<tool_call>\n<function=get_current_weather>\n<parameter=location></parameter>\n"
        "</function>\n</tool_call>"
    )
    assert calls(run(empty, gen, tools=SG_TOOLS, **C)) == [
        ("get_current_weather", {"location": ""})
    ]
    special = (
        "<tool_call>\n<function=sql_interpreter>\n"
        "<parameter=query>SELECT * FROM users WHERE name = 'John \"Doe\"'</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert calls(run(special, gen, tools=SG_TOOLS, **C)) == [
        ("sql_interpreter", {"query": "SELECT * FROM users WHERE name = 'John \"Doe\"'"})
    ]


def test_sglang_incomplete_call_v1_is_content() -> None:
    text = "<tool_call>\n<function=get_current_weather>\n<parameter=location>London"
    assert run(text, 1, tools=SG_TOOLS, **C).content == text


def test_sglang_incomplete_call_v2_is_closed() -> None:
    # V2 already sent the call; batch equals streaming: the call stays, never repaired
    # (docs/parsers.md "Cut-off calls")
    text = "<tool_call>\n<function=get_current_weather>\n<parameter=location>London"
    assert [(c.name, c.arguments) for c in run(text, 2, tools=SG_TOOLS, **C).tool_calls] == [
        ("get_current_weather", '{"location":"London')
    ]


@GENS
def test_sglang_nested_anyof_array(gen: int) -> None:
    schema = {
        "anyOf": [
            {
                "anyOf": [
                    {"type": "null"},
                    {"anyOf": [{"type": "array", "items": {}}, {"type": "null"}]},
                ]
            },
            {"type": "null"},
        ],
        "default": None,
    }
    text = wrapped("process_optional_list", param("items", '[true, null, {"enabled": false}]'))
    msg = run(text, gen, tools=[tool("process_optional_list", items=schema)], **C)
    assert calls(msg) == [("process_optional_list", {"items": [True, None, {"enabled": False}]})]


# --- DYNAMO ------------------------------------------------------------------------------


@GENS
def test_dynamo_case_1_single_call(gen: int) -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nNYC\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = run(text, gen, **C)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"NYC"}')
    ]
    assert msg.content is None


@GENS
def test_dynamo_case_5_missing_outer_close_recovers(gen: int) -> None:
    # Dynamo marks this KnownBroken (0 calls); `</function>` completes the call, so we keep
    # it (the contract's bare `<function=…>` rule: the block is a call without the wrapper).
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nNYC\n</parameter>\n</function>"
    )
    msg = run(text, gen, **C)
    assert calls(msg) == [("get_weather", {"location": "NYC"})]
    assert msg.content is None


# --- VLLM: tag-like text inside string values (test_qwen3_xml_coder_shared.py) ------------

XML_TAGS_IN_CONTENT = (
    "char_deltas = [\n"
    '    "<tool_call>\\n",\n'
    '    "<parameter=query>\\n",\n'
    '    "\\n</parameter>\\n",\n'
    '    "</function>\\n",\n'
    "]\n"
)
PARAM_LIKE_LINES = (
    'TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n#!/usr/bin/env python3\n'
    '</parameter>\n"""\n'
)
REAL_PARAM_NAME_LITERAL = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
FULL_NESTED_CALL = (
    'doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\nliteral/value.txt\n'
    "</parameter>\n<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>\n"
    '"""\n'
)


def write_file(path: str, content: str) -> str:
    return (
        "<tool_call>\n<function=write_file>\n"
        f"<parameter=path>\n{path}\n</parameter>\n"
        f"<parameter=content>\n{content}</parameter>\n"
        "</function>\n</tool_call>\n"
    )


# V1 jails up to the first `</tool_call>` (parsers.md 3), so a literal `</tool_call>` inside a value
# cuts its region there: the nested-call cases are V2 only (docs "Conformance notes").
@pytest.mark.parametrize(
    ("content", "gens"),
    [
        (XML_TAGS_IN_CONTENT, (1, 2)),
        (PARAM_LIKE_LINES, (1, 2)),
        (REAL_PARAM_NAME_LITERAL, (1, 2)),
        (FULL_NESTED_CALL, (2,)),
    ],
    ids=["xml_tags", "param_like_lines", "real_param_name_literal", "full_nested_call"],
)
def test_vllm_tag_like_text_stays_in_the_value(content: str, gens: tuple[int, ...]) -> None:
    text = write_file("fixture.py", content)
    for gen in gens:
        msg = run(text, gen, tools=[WRITE_FILE], **C)
        assert [c.name for c in msg.tool_calls] == ["write_file"]
        args = json.loads(msg.tool_calls[0].arguments)
        assert list(args) == ["path", "content"]
        assert args == {"path": "fixture.py", "content": content.rstrip("\n")}
        assert msg.content is None
        # the lines of the value arriving one delta each (vLLM's streaming variants)
        s = feed(text.splitlines(keepends=True), gen, tools=[WRITE_FILE], **C)
        assert s.call_args(0) == args


def test_vllm_two_calls_second_holds_an_out_of_schema_nested_call_v2() -> None:
    nested = (
        'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n'
        '</function>\n</tool_call>\n"""\n'
    )
    first = "<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>"
    text = first + "\n\n" + write_file("fixture.py", nested).rstrip("\n")
    msg = run(text, 2, tools=[WRITE_FILE], **C)
    assert calls(msg) == [
        ("foo", {"bar": "baz"}),
        ("write_file", {"path": "fixture.py", "content": nested.rstrip("\n")}),
    ]
    s = feed(text.splitlines(keepends=True), 2, tools=[WRITE_FILE], **C)
    assert s.call_args(1)["content"] == nested.rstrip("\n")


def test_tag_like_value_still_streams_before_the_candidate_v2() -> None:
    # text before the first tag-like candidate goes out at once (principle 4); only the text
    # after it waits until the candidate is resolved
    head = write_file("fixture.py", PARAM_LIKE_LINES).split("</parameter>\n<parameter=new")[0]
    s = feed([head + "</parameter>\n<parameter=new_string>\n#!/usr"], 2, tools=[WRITE_FILE], **C)
    sent = "".join(tc.arguments or "" for d in s.deltas[0] for tc in d.tool_calls)
    assert sent.endswith('"content":"TOOL_CALL_TEMPLATE = \\"\\"\\"')


# --- SGLANG: drifted close markers (test_qwen3_coder_malformed_parameter_end.py) ----------

DAYS = tool("get_weather", city="string", days="integer")


def days_call(city_block: str) -> str:
    return (
        "<tool_call>\n<function=get_weather>\n"
        f"<parameter=city>\n{city_block}\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )


@GENS
@pytest.mark.parametrize(
    "block",
    [
        "Shanghai\n</parameter1>",
        "Shanghai\n</parameter_function>",
        "Shanghai\n</parameter",
        "Shanghai\n</parameter>",
    ],
)
@pytest.mark.parametrize("size", [3, 1000])
def test_sglang_drifted_end_marker_does_not_leak(gen: int, block: str, size: int) -> None:
    text = days_call(block)
    assert calls(run(text, gen, tools=[DAYS], **C)) == [
        ("get_weather", {"city": "Shanghai", "days": 3})
    ]
    assert feed(sized(text, size), gen, tools=[DAYS], **C).call_args(0) == {
        "city": "Shanghai",
        "days": 3,
    }


@GENS
def test_sglang_angle_brackets_inside_value_are_kept(gen: int) -> None:
    msg = run(days_call("a <b>tag</b> city\n</parameter>"), gen, tools=[DAYS], **C)
    assert calls(msg)[0][1]["city"] == "a <b>tag</b> city"


# --- DYNAMO: xml/parser.rs tests -----------------------------------------------------------


@GENS
def test_dynamo_normal_text_around_the_call(gen: int) -> None:
    text = (
        "I'll help you with that. <tool_call>\n<function=get_weather>\n<parameter=city>\n"
        "Dallas\n</parameter>\n</function>\n</tool_call> Let me check that for you."
    )
    msg = run(text, gen, **C)
    assert calls(msg) == [("get_weather", {"city": "Dallas"})]
    # Adaptation (parsers.md GLM example, docs "Blanks around calls"): the blank before the call is
    # markup, the one after it (followed by text) is content; Dynamo keeps both.
    assert msg.content == "I'll help you with that. Let me check that for you."


@GENS
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "<tool_call>\n<function=execute_bash>\n<parameter=command>\nls -la\n</function>\n"
            "</tool_call>",
            ("execute_bash", {"command": "ls -la"}),
        ),
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nBoston\n</parameter>\n"
            "</tool_call>",
            ("get_weather", {"city": "Boston"}),
        ),
        (
            # Dynamo and SGLang keep `\n</tool_call>` in the value here; the bound ends the
            # value before it (docs "Conformance notes")
            "<tool_call>\n<function=run_query>\n<parameter=sql>\nSELECT * FROM users\n</tool_call>",
            ("run_query", {"sql": "SELECT * FROM users"}),
        ),
        (
            # vLLM's rule (a line-start `<parameter=NAME>` ends a value that lost its
            # close); Dynamo keeps `rust programming\n<parameter=limit>\n10` as one value
            "<tool_call>\n<function=search>\n<parameter=query>\nrust programming\n"
            "<parameter=limit>\n10\n</function>\n</tool_call>",
            ("search", {"query": "rust programming", "limit": "10"}),
        ),
    ],
    ids=["no_param_close", "no_function_close", "no_closes", "two_params_no_closes"],
)
def test_dynamo_missing_closing_tags(gen: int, text: str, expected: tuple) -> None:
    assert calls(run(text, gen, **C)) == [expected]


@GENS
def test_dynamo_no_outer_close_keeps_the_suffix(gen: int) -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNYC\n</parameter>\n</function>\n"
        "TRAILING NOTE"
    )
    msg = run(text, gen, **C)
    assert calls(msg) == [("get_weather", {"city": "NYC"})]
    assert "TRAILING NOTE" in (msg.content or "")


@GENS
def test_dynamo_schema_aware_conversion(gen: int) -> None:
    multi = tool(
        "multi_param_func",
        param1="string",
        param2="float",
        param3="integer",
        param4="boolean",
        param5="object",
        param6="array",
        param7="null",
        param8="other_type",
    )
    text = (
        "<tool_call>\n<function=multi_param_func>\n"
        "<parameter=param1>42</parameter>\n<parameter=param2>41.9</parameter>\n"
        "<parameter=param3>42</parameter>\n<parameter=param4>true</parameter>\n"
        '<parameter=param5>{"key": "value"}</parameter>\n<parameter=param6>[1, 2, 3]</parameter>\n'
        "<parameter=param7>null</parameter>\n"
        "<parameter=param8>{'arg1': 3, 'arg2': [1, 2]}</parameter>\n</function>\n</tool_call>"
    )
    assert calls(run(text, gen, tools=[multi], **C)) == [
        (
            "multi_param_func",
            {
                "param1": "42",
                "param2": 41.9,
                "param3": 42,
                "param4": True,
                "param5": {"key": "value"},
                "param6": [1, 2, 3],
                "param7": None,
                "param8": {"arg1": 3, "arg2": [1, 2]},
            },
        )
    ]


@GENS
def test_dynamo_conversion_fallbacks_and_no_schema(gen: int) -> None:
    typed = tool("test_func", int_param="integer", float_param="float", bool_param="boolean")
    text = (
        "<tool_call>\n<function=test_func>\n<parameter=int_param>not_an_int</parameter>\n"
        "<parameter=float_param>not_a_float</parameter>\n"
        "<parameter=bool_param>not_a_bool</parameter>\n</function>\n</tool_call>"
    )
    assert calls(run(text, gen, tools=[typed], **C)) == [
        (
            "test_func",
            {"int_param": "not_an_int", "float_param": "not_a_float", "bool_param": False},
        )
    ]
    text = (
        "<tool_call>\n<function=unknown_func>\n<parameter=param1>42</parameter>\n"
        "<parameter=param2>true</parameter>\n<parameter=param3>hello</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert calls(run(text, gen, **C)) == [
        ("unknown_func", {"param1": "42", "param2": "true", "param3": "hello"})
    ]


@GENS
def test_dynamo_anyof_of_objects_is_an_object(gen: int) -> None:
    location = {
        "anyOf": [
            {"type": "object", "properties": {"city": {"type": "string"}}},
            {"type": "object", "properties": {"lat": {"type": "number"}}},
        ]
    }
    text = wrapped("get_weather", param("location", '{"city": "Paris"}'))
    assert calls(run(text, gen, tools=[tool("get_weather", location=location)], **C)) == [
        ("get_weather", {"location": {"city": "Paris"}})
    ]


@GENS
def test_hyphenated_names_and_html_entities(gen: int) -> None:
    text = (
        "<tool_call>\n<function=my-tool.v2>\n<parameter=max-retries>\n3\n</parameter>\n"
        "<parameter=q>\na &lt; b &amp;&amp; c\n</parameter>\n</function>\n</tool_call>"
    )
    t = tool("my-tool.v2", q="string")
    t["function"]["parameters"]["properties"]["max-retries"] = {"type": "integer"}
    assert calls(run(text, gen, tools=[t], **C)) == [
        # Divergence: no entity decoding; the template writes values raw
        ("my-tool.v2", {"max-retries": 3, "q": "a &lt; b &amp;&amp; c"})
    ]


@GENS
@pytest.mark.parametrize(
    ("written", "value"), [("1e-3", 0.001), ("-0.5", -0.5), ("2.50", 2.5), ("42", 42)]
)
def test_number_values_keep_their_value(gen: int, written: str, value: float) -> None:
    text = wrapped("m", param("x", written))
    msg = run(text, gen, tools=[tool("m", x="number")], **C)
    assert calls(msg) == [("m", {"x": value})]


@GENS
@pytest.mark.parametrize(("written", "arguments"), [("42.0", '{"x":42}'), ("1e3", '{"x":1000}')])
def test_whole_numbers_are_written_as_integers(gen: int, written: str, arguments: str) -> None:
    # vLLM (`int(val)` when `val - int(val) == 0`) and Dynamo (`float_val.fract() == 0.0`)
    msg = run(wrapped("m", param("x", written)), gen, tools=[tool("m", x="number")], **C)
    assert msg.tool_calls[0].arguments == arguments
