"""Conformance: GLM 4.5/4.6/4.7 calls (`glm47`, reasoning `glm45`) against other tests.

Ported from vLLM `tests/tool_parsers/test_glm4_moe_tool_parser.py`,
`test_glm47_moe_tool_parser.py` and `tests/reasoning/test_glm4_moe_reasoning_parser.py`
(VLLM), SGLang `test_glm4_moe_detector.py` (SGLANG) and Dynamo
`lib/parsers/src/tool_calling/xml/glm47_parser.rs` tests and fixture `glm47.rs` (DYNAMO).
Token streaming becomes character chunks; `parser_check.run` also asserts batch == streaming.
Adaptations cite `docs/parsers.md`.
"""

from __future__ import annotations

import json

import pytest
from conformance_check import VLLM_THINK_CASES, feed, sized
from parser_check import calls, run, tool

G = {"tool_parser": "glm47", "reasoning_parser": "glm45"}
GENS = pytest.mark.parametrize("gen", [1, 2])
WEATHER = tool("get_weather", city="string")
CITY_DATE = tool("get_weather", city="string", date="string")


def indented(name: str, *pairs: tuple[str, str]) -> str:
    """GLM-4.5 layout: newline and indentation between the tags."""
    body = "".join(
        f"\n    <arg_key>{k}</arg_key>\n    <arg_value>{v}</arg_value>" for k, v in pairs
    )
    return f"<tool_call>{name}{body}\n    </tool_call>"


def inline(name: str, *pairs: tuple[str, str]) -> str:
    """GLM-4.7 layout: no separators."""
    body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in pairs)
    return f"<tool_call>{name}{body}</tool_call>"


DALLAS = (("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit"))

# --- VLLM ------------------------------------------------------------------------------

EXTRACT = [
    (
        indented("get_current_weather", *DALLAS),
        [("get_current_weather", dict(DALLAS))],
        None,
    ),
    (
        indented("get_current_weather", *DALLAS)
        + "\n    "
        + indented(
            "get_current_weather", ("city", "Orlando"), ("state", "FL"), ("unit", "fahrenheit")
        ),
        [
            ("get_current_weather", dict(DALLAS)),
            ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}),
        ],
        None,
    ),
    (
        "I'll help you check the weather. "
        + indented(
            "get_current_weather", ("city", "Seattle"), ("state", "WA"), ("unit", "celsius")
        ),
        [("get_current_weather", {"city": "Seattle", "state": "WA", "unit": "celsius"})],
        # Adaptation (parsers.md GLM example: `I'll check the weather for you. <tool_call>…` gives
        # content without the blank): vLLM keeps the trailing space.
        "I'll help you check the weather.",
    ),
    (
        indented("get_current_weather", ("city", "New York"), ("state", "NY"), ("unit", "celsius")),
        [("get_current_weather", {"city": "New York", "state": "NY", "unit": "celsius"})],
        None,
    ),
    (
        "I will help you get the weather."
        + indented("get_weather", ("city", "Beijing"), ("date", "2025-08-01")),
        [("get_weather", {"city": "Beijing", "date": "2025-08-01"})],
        "I will help you get the weather.",
    ),
]


@GENS
@pytest.mark.parametrize(("text", "expected", "content"), EXTRACT)
def test_vllm_extract_tool_calls(gen: int, text: str, expected: list, content: str | None) -> None:
    msg = run(text, gen, tools=[WEATHER], **G)
    assert calls(msg) == expected
    assert msg.content == content
    assert msg.finish_reason == "tool_calls"


@GENS
def test_vllm_no_tools(gen: int) -> None:
    msg = run("This is a test", gen, tools=[WEATHER], **G)
    assert (msg.tool_calls, msg.content) == ([], "This is a test")


@GENS
def test_vllm_thinking_then_call(gen: int) -> None:
    text = (
        "<think>I want to get the weather.</think>\n\nI will help you get the weather.\n"
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>"
    )
    msg = run(text, gen, tools=[WEATHER], **G)
    assert calls(msg) == [("get_weather", {"city": "Beijing", "date": "2025-08-01"})]
    # Adaptation: vLLM's tool-parser test runs without a reasoning parser and gets the
    # `<think>` block in content; with `glm45` configured it is reasoning (parsers.md GLM family),
    # and the newline before the call is markup (docs "Blanks around calls").
    assert msg.reasoning_content == "I want to get the weather."
    assert msg.content == "\n\nI will help you get the weather."


@GENS
def test_vllm_malformed_key_is_handled(gen: int) -> None:
    text = (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle</arg_value>\n"
        "<arg_key>incomplete_arg\n<arg_value>value</arg_value>\n</tool_call>"
    )
    msg = run(text, gen, tools=[WEATHER], **G)  # no exception; batch == streaming
    if gen == 1:
        assert (msg.tool_calls, msg.content) == ([], text)
    else:  # the call went out; the key never closed: its arguments as streamed
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [
            ("get_weather", '{"city":"Seattle"')
        ]


@GENS
@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>get_current_time\n</tool_call>",
        "<tool_call>get_current_date</tool_call>",
        "<tool_call>get_time\n</tool_call>",
    ],
)
def test_vllm_zero_argument_calls(gen: int, text: str) -> None:
    msg = run(text, gen, tools=[WEATHER], **G)
    name = text[len("<tool_call>") :].split("<")[0].strip()
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [(name, "{}")]
    assert msg.content is None


@GENS
def test_vllm_mixed_content_and_two_calls(gen: int) -> None:
    text = (
        "I will help you get the weather info.\n\n"
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>\n\n"
        "meaningwhile, I will also check the weather in Shanghai.\n\n"
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Shanghai</arg_value>\n"
        "<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>"
    )
    msg = run(text, gen, tools=[WEATHER], **G)
    assert calls(msg) == [
        ("get_weather", {"city": "Beijing", "date": "2025-08-01"}),
        ("get_weather", {"city": "Shanghai", "date": "2025-08-01"}),
    ]
    # Adaptation (principle 1 lossless; docs "Text after calls is kept"): vLLM returns only the
    # text before the first call; the text between the calls is content too.
    assert msg.content == (
        "I will help you get the weather info.\n\n"
        "meaningwhile, I will also check the weather in Shanghai."
    )


@GENS
def test_vllm_streaming_plain_text_and_content_before_call(gen: int) -> None:
    s = feed(["This is just regular text without any tool calls."], gen, **G)
    assert s.content == "This is just regular text without any tool calls."
    s = feed(["I will help you get the weather.<tool_call>"], gen, **G)
    first = "".join(d.content or "" for d in s.deltas[0])
    assert first == "I will help you get the weather."


@GENS
def test_vllm_streaming_incremental_string_value(gen: int) -> None:
    chunks = [
        "<tool_call>",
        "get_weather\n",
        "<arg_key>city</arg_key>",
        "<arg_value>",
        "Bei",
        "jing",
        "</arg_value>",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=[WEATHER], **G)
    assert (s.names, s.call_args(0)) == ({0: "get_weather"}, {"city": "Beijing"})
    if gen == 2:  # V2 streams the string as it arrives (principle 4)
        assert any("Bei" in f and "jing" not in f for f in s.fragments[0])


@GENS
def test_vllm_empty_tool_call_does_not_hang(gen: int) -> None:
    msg = run("<tool_call></tool_call>", gen, **G)
    assert (msg.tool_calls, msg.content) == ([], "<tool_call></tool_call>")


@GENS
def test_vllm_streaming_sequential_calls_and_json_escapes(gen: int) -> None:
    chunks = [
        "<tool_call>get_weather\n",
        "<arg_key>city</arg_key>",
        "<arg_value>Beijing</arg_value>",
        "</tool_call>",
        "<tool_call>get_weather\n",
        "<arg_key>city</arg_key>",
        "<arg_value>Shanghai</arg_value>",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=[WEATHER], **G)
    assert [s.call_args(0), s.call_args(1)] == [{"city": "Beijing"}, {"city": "Shanghai"}]
    chunks = [
        "<tool_call>send_message\n",
        "<arg_key>message</arg_key>",
        '<arg_value>Hello "world"\nNew line</arg_value>',
        "</tool_call>",
    ]
    s = feed(chunks, gen, **G)
    assert s.call_args(0) == {"message": 'Hello "world"\nNew line'}


BUBBLE_SORT = '''#!/usr/bin/env python3
"""
Bubble Sort Implementation
"""

def bubble_sort(arr):
    n = len(arr)
    for i in range(n):
        for j in range(0, n - i - 1):
            if arr[j] > arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
    return arr

if __name__ == "__main__":
    print(f"Sorted: {bubble_sort([64, 34, 25])}")'''


@GENS
def test_vllm_long_string_streams_incrementally(gen: int) -> None:
    write = tool("write_to_file", file_path="string", content="string")
    chunks = [
        "<tool_call>",
        "write_to_file\n",
        "<arg_key>file_path</arg_key>",
        "<arg_value>/tmp/bubble_sort.py</arg_value>",
        "<arg_key>content</arg_key>",
        "<arg_value>",
        *(line + "\n" for line in BUBBLE_SORT.split("\n")),
        "</arg_value>",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=[write], **G)
    args = s.call_args(0)
    assert args["file_path"] == "/tmp/bubble_sort.py"
    assert args["content"] == BUBBLE_SORT  # the newline next to `</arg_value>` is trimmed
    if gen == 2:
        assert len(s.fragments[0]) >= 10
    else:  # V1 sends the call whole (docs/parsers.md 3)
        assert len(s.fragments[0]) == 1


@GENS
def test_vllm_numeric_deserialization(gen: int) -> None:
    text = (
        "<tool_call>calculate\n<arg_key>operation</arg_key>\n<arg_value>add</arg_value>\n"
        "<arg_key>a</arg_key>\n<arg_value>42</arg_value>\n<arg_key>b</arg_key>\n"
        "<arg_value>3.14</arg_value>\n<arg_key>enabled</arg_key>\n<arg_value>true</arg_value>\n"
        "</tool_call>"
    )
    calc = tool("calculate", operation="string", a="integer", b="number", enabled="boolean")
    assert calls(run(text, gen, tools=[calc], **G)) == [
        ("calculate", {"operation": "add", "a": 42, "b": 3.14, "enabled": True})
    ]
    # Adaptation (docs/parsers.md GLM "Values": "otherwise the schema type decides …; else a string,
    # kept as written"; Dynamo does the same): vLLM's test has no schema for `calculate` and
    # expects 42/3.14/true typed; without a schema we keep the strings.
    assert calls(run(text, gen, tools=[WEATHER], **G)) == [
        ("calculate", {"operation": "add", "a": "42", "b": "3.14", "enabled": "true"})
    ]


@GENS
def test_vllm_whitespace_preserved_in_string_values(gen: int) -> None:
    text = (
        "<tool_call>apply_diff\n<arg_key>s</arg_key>\n"
        "<arg_value>    indented code    </arg_value>\n</tool_call>"
    )
    msg = run(text, gen, tools=[tool("apply_diff", s="string")], **G)
    assert calls(msg) == [("apply_diff", {"s": "    indented code    "})]


@GENS
def test_vllm_unterminated_opener_is_content(gen: int) -> None:
    msg = run("<tool_call>   ", gen, tools=[WEATHER], **G)
    assert (msg.tool_calls, msg.content) == ([], "<tool_call>   ")


@GENS
def test_vllm_unicode_kept(gen: int) -> None:
    text = (
        "<tool_call>send_message\n<arg_key>greeting</arg_key>\n<arg_value>你好世界</arg_value>\n"
        "<arg_key>emoji</arg_key>\n<arg_value>🎉</arg_value>\n</tool_call>"
    )
    raw = run(text, gen, tools=[WEATHER], **G).tool_calls[0].arguments
    assert "你好世界" in raw and "🎉" in raw and "\\u4f60" not in raw
    assert json.loads(raw) == {"greeting": "你好世界", "emoji": "🎉"}


@GENS
@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 9999])
def test_vllm_stream_intervals(gen: int, size: int) -> None:
    text = (
        "Checking Beijing.\n"
        + inline("get_weather", ("city", "Beijing"))
        + "\nAlso Shanghai.\n"
        + inline("get_weather", ("city", "Shanghai"))
    )
    s = feed(sized(text, size), gen, tools=[WEATHER], **G)
    assert s.content == "Checking Beijing.\nAlso Shanghai."
    assert [s.call_args(0), s.call_args(1)] == [{"city": "Beijing"}, {"city": "Shanghai"}]
    chunks = [
        "<tool_call>calculate\n<arg_key>operation</arg_key><arg_value>add</arg_value>"
        "<arg_key>a</arg_key>",
        "<arg_value>42</arg_value><arg_key>b</arg_key><arg_value>3.14</arg_value></tool_call>",
    ]
    calc = tool("calculate", operation="string", a="number", b="number")
    s = feed(chunks, gen, tools=[calc], **G)
    assert s.call_args(0) == {"operation": "add", "a": 42, "b": 3.14}


def test_vllm_incomplete_call_v1_is_content() -> None:
    text = indented("get_weather", ("city", "Beijing"), ("date", "2025-08-01"))
    text = text[: text.rindex("\n    </tool_call>")]
    msg = run(text, 1, tools=[WEATHER], **G)
    assert (msg.tool_calls, msg.content) == ([], text)


def test_vllm_incomplete_call_v2_divergence() -> None:
    # Divergence (docs "Cut-off calls"): V2 streamed the call and batch equals streaming,
    # so it is kept, never repaired: its arguments are what was streamed.
    text = indented("get_weather", ("city", "Beijing"), ("date", "2025-08-01"))
    text = text[: text.rindex("\n    </tool_call>")]
    msg = run(text, 2, tools=[WEATHER], **G)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"city":"Beijing","date":"2025-08-01"')
    ]
    assert msg.content is None


@GENS
def test_vllm_glm47_layouts(gen: int) -> None:
    tools = [tool("get_current_date"), WEATHER]
    for text, expected, content in [
        (inline("get_weather", ("city", "Beijing")), [("get_weather", {"city": "Beijing"})], None),
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
            "</tool_call>",
            [("get_weather", {"city": "Beijing"})],
            None,
        ),
        (
            "Checking.<tool_call>get_current_date</tool_call>",
            [("get_current_date", {})],
            "Checking.",
        ),
        ("  \n  <tool_call>get_current_date</tool_call>", [("get_current_date", {})], None),
    ]:
        msg = run(text, gen, tools=tools, **G)
        assert (calls(msg), msg.content) == (expected, content)


# --- VLLM reasoning (glm45) --------------------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            "<think>This is a reasoning section</think>This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        ("This is the rest", None, "This is the rest"),
        ("<think>This is a reasoning section</think>", "This is a reasoning section", None),
        (
            "<think>This is a reasoning\nsection</think>This is the rest\nThat",
            "This is a reasoning\nsection",
            "This is the rest\nThat",
        ),
        ("<think></think>This is the rest", None, "This is the rest"),
        ("<think></think>", None, None),
        # vLLM's batch and stream disagree here (batch: all content); we follow its stream
        # result, since batch must equal streaming (principle 2)
        ("<think>This is a reasoning section", "This is a reasoning section", None),
    ],
)
def test_vllm_glm45_reasoning(
    gen: int, text: str, reasoning: str | None, content: str | None
) -> None:
    msg = run(text, gen, tool_parser=None, reasoning_parser="glm45")
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


# --- SGLANG ------------------------------------------------------------------------------


@GENS
def test_sglang_single_and_multiple_calls(gen: int) -> None:
    one = (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n</tool_call>"
    )
    two = one + one.replace("Beijing", "Shanghai").replace("06-27", "06-28")
    msg = run(two, gen, tools=[CITY_DATE], **G)
    assert calls(msg) == [
        ("get_weather", {"city": "Beijing", "date": "2024-06-27"}),
        ("get_weather", {"city": "Shanghai", "date": "2024-06-28"}),
    ]
    assert msg.content is None
    chunks = [
        "<tool_call>get_weather\n",
        "<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n",
        "<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n",
        "</tool_call><tool_call>get_weather\n",
        "<arg_key>city</arg_key>\n<arg_value>Shanghai</arg_value>\n",
        "<arg_key>date</arg_key>\n<arg_value>2024-06-28</arg_value>\n",
        "</tool_call>",
    ]
    s = feed(chunks, gen, tools=[CITY_DATE], **G)
    assert [s.call_args(0), s.call_args(1)] == [
        {"city": "Beijing", "date": "2024-06-27"},
        {"city": "Shanghai", "date": "2024-06-28"},
    ]


@GENS
def test_sglang_undeclared_tool_is_returned(gen: int) -> None:
    text = (
        "<tool_call>invalid_func\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "</tool_call>"
    )
    # Adaptation (docs/parsers.md "Common rules": "A call to a tool the request did not declare is
    # returned (the client decides)"): SGLang and Dynamo drop it.
    assert calls(run(text, gen, tools=[CITY_DATE], **G)) == [("invalid_func", {"city": "Beijing"})]


TODOS = tool("todo_write", todos={"type": "array", "description": "The updated todo list"})


@GENS
@pytest.mark.parametrize(
    ("written", "task"),
    [
        ('[{"id": "1", "task": "Check", "status": "pending"}]', "Check"),
        ('[{\\"id\\": \\"1\\", \\"task\\": \\"Check\\", \\"status\\": \\"pending\\"}]', "Check"),
        (
            '[{"id": "1", "task": "Check file at C:\\\\Users\\\\test.txt", "status": "pending"}]',
            "Check file at C:\\Users\\test.txt",
        ),
        (
            '[{\\"id\\": \\"1\\", \\"task\\": \\"Check file at C:\\\\\\\\Users\\\\\\\\test.txt\\", '
            '\\"status\\": \\"pending\\"}]',
            "Check file at C:\\Users\\test.txt",
        ),
        (
            '[{"id": "1", "task": "Print \\\\n to see newline","status": "pending"}]',
            "Print \\n to see newline",
        ),
    ],
)
@pytest.mark.parametrize("sep", ["\n", "\\n"])
def test_sglang_array_with_escaped_json(gen: int, written: str, task: str, sep: str) -> None:
    text = (
        f"<tool_call>todo_write{sep}<arg_key>todos</arg_key>{sep}<arg_value>{written}"
        "</arg_value>\n</tool_call>"
    )
    msg = run(text, gen, tools=[TODOS], **G)
    assert calls(msg) == [
        ("todo_write", {"todos": [{"id": "1", "task": task, "status": "pending"}]})
    ]
    assert msg.content is None


@GENS
@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>杭州</arg_value>\n</tool_call>",
        "<tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>杭州</arg_value>\\n</tool_call>",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>杭州</arg_value></tool_call>",
    ],
)
def test_sglang_separators(gen: int, text: str) -> None:
    msg = run(text, gen, tools=[WEATHER], **G)
    assert calls(msg) == [("get_weather", {"city": "杭州"})]
    assert msg.content is None


@GENS
@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>get_time\n</tool_call>",
        "<tool_call>get_time\\n</tool_call>",
        "<tool_call>get_time</tool_call>",
    ],
)
def test_sglang_no_arguments(gen: int, text: str) -> None:
    msg = run(text, gen, tools=[WEATHER, tool("get_time")], **G)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_time", "{}")]


@GENS
def test_sglang_chinese_text_and_two_args(gen: int) -> None:
    text = "让我查询天气" + inline("get_weather", ("city", "杭州"), ("unit", "celsius"))
    msg = run(text, gen, tools=[WEATHER], **G)
    assert (msg.content, calls(msg)) == (
        "让我查询天气",
        [("get_weather", {"city": "杭州", "unit": "celsius"})],
    )
    plain = "这是普通文本，没有工具调用"
    assert run(plain, gen, **G).content == plain


@GENS
def test_sglang_opener_then_newline_is_not_a_call_yet(gen: int) -> None:
    s = feed(["<tool_call>", "\n"], gen, tools=[WEATHER], **G)
    assert not any(d.tool_calls for ds in s.deltas for d in ds)
    assert s.content == "<tool_call>\n"  # never became a call: verbatim (principle 1)


@GENS
def test_sglang_string_values_keep_indentation_and_raw_escapes(gen: int) -> None:
    diff = tool("apply_diff", old_string="string", new_string="string")
    text = (
        "<tool_call>apply_diff\n<arg_key>old_string</arg_key>\n<arg_value>    indented code"
        "</arg_value>\n<arg_key>new_string</arg_key>\n<arg_value>        also indented"
        "</arg_value>\n</tool_call>"
    )
    assert calls(run(text, gen, tools=[diff], **G)) == [
        ("apply_diff", {"old_string": "    indented code", "new_string": "        also indented"})
    ]
    text = (
        '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>"\\C|\\."</arg_value>\n'
        "<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n</tool_call>"
    )
    # Divergence: a declared string is the text as written, quotes included
    assert calls(run(text, gen, tools=[CITY_DATE], **G)) == [
        ("get_weather", {"city": '"\\C|\\."', "date": "2024-06-27"})
    ]


@GENS
def test_sglang_underscored_number_in_a_string_stays(gen: int) -> None:
    text = inline("f", ("v", "123_456"), ("w", "1_000.5"))
    assert calls(run(text, gen, tools=[tool("f", v="string", w="string")], **G)) == [
        ("f", {"v": "123_456", "w": "1_000.5"})
    ]


# --- DYNAMO ------------------------------------------------------------------------------


@GENS
def test_dynamo_parse_cases(gen: int) -> None:
    cases = [
        (
            inline("get_weather", ("location", "San Francisco")),
            [("get_weather", {"location": "San Francisco"})],
        ),
        (
            inline("book_flight", ("from", "NYC"), ("to", "LAX"), ("date", "2026-03-15")),
            [("book_flight", {"from": "NYC", "to": "LAX", "date": "2026-03-15"})],
        ),
        (
            inline("search", ("filters", '{"category": "books", "price_max": 50}')),
            [("search", {"filters": {"category": "books", "price_max": 50}})],
        ),
        (
            inline("get_weather", ("location", "NYC")) + inline("get_time", ("timezone", "EST")),
            [("get_weather", {"location": "NYC"}), ("get_time", {"timezone": "EST"})],
        ),
        ("<tool_call>get_current_time</tool_call>", [("get_current_time", {})]),
        (
            inline(
                "write_file",
                ("path", "/tmp/hello.py"),
                ("content", '#!/usr/bin/env python3\nprint("Hello, World!")\n'),
            ),
            [
                (
                    "write_file",
                    {
                        "path": "/tmp/hello.py",
                        "content": '#!/usr/bin/env python3\nprint("Hello, World!")',
                    },
                )
            ],
        ),
        (
            # Divergence: entities are the model's text, not decoded
            inline("write_file", ("content", "x &lt; y &amp;&amp; y &gt; z")),
            [("write_file", {"content": "x &lt; y &amp;&amp; y &gt; z"})],
        ),
    ]
    for text, expected in cases:
        msg = run(text, gen, **G)
        assert (calls(msg), msg.content) == (expected, None)


@GENS
def test_dynamo_normal_text_and_fixture_case_1(gen: int) -> None:
    text = "I'll check the weather for you. " + inline("get_weather", ("location", "Paris"))
    msg = run(text, gen, **G)
    assert (msg.content, calls(msg)) == (
        "I'll check the weather for you.",
        [("get_weather", {"location": "Paris"})],
    )
    msg = run(inline("get_weather", ("location", "NYC")), gen, **G)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"NYC"}')
    ]


@GENS
def test_dynamo_name_only_without_close_is_content(gen: int) -> None:
    msg = run("<tool_call>get_weather", gen, **G)
    assert (msg.tool_calls, msg.content) == ([], "<tool_call>get_weather")


def test_dynamo_missing_end_recovers_v2() -> None:
    text = "<tool_call>get_weather<arg_key>location</arg_key><arg_value>NYC</arg_value>"
    assert [(c.name, c.arguments) for c in run(text, 2, **G).tool_calls] == [
        ("get_weather", '{"location":"NYC"')
    ]
    two = inline("get_weather", ("city", "NYC")) + (
        "<tool_call>get_time<arg_key>tz</arg_key><arg_value>EST</arg_value>"
    )
    assert [c.name for c in run(two, 2, **G).tool_calls] == ["get_weather", "get_time"]


def test_dynamo_missing_end_v1_is_content() -> None:
    # V1 has sent nothing when the output ends inside the jail: the unparsed region is
    # content (docs/parsers.md 3, "If nothing parses, the buffered text goes out as content"; vLLM
    # agrees). Dynamo's own jail recovers it; documented in docs "Conformance notes".
    tail = "<tool_call>get_time<arg_key>tz</arg_key><arg_value>EST</arg_value>"
    msg = run(inline("get_weather", ("city", "NYC")) + tail, 1, **G)
    assert (calls(msg), msg.content) == ([("get_weather", {"city": "NYC"})], tail)


@GENS
def test_dynamo_type_coercion(gen: int) -> None:
    temp = tool(
        "set_temperature", degrees="number", enabled="boolean", count="integer", label="string"
    )
    text = inline(
        "set_temperature",
        ("degrees", "72.5"),
        ("enabled", "true"),
        ("count", "3"),
        ("label", "warm"),
    )
    assert calls(run(text, gen, tools=[temp], **G)) == [
        ("set_temperature", {"degrees": 72.5, "enabled": True, "count": 3, "label": "warm"})
    ]
    tags = tool("tag_item", tags="array", ids="array")
    text = inline("tag_item", ("tags", "rust, python, go"), ("ids", "[1, 2, 3]"))
    assert calls(run(text, gen, tools=[tags], **G)) == [
        ("tag_item", {"tags": ["rust", "python", "go"], "ids": [1, 2, 3]})
    ]
    bad = inline("test_func", ("count", "not_a_number"))
    assert calls(run(bad, gen, tools=[tool("test_func", count="integer")], **G)) == [
        ("test_func", {"count": "not_a_number"})
    ]


# --- VLLM reasoning (glm47: the GLM-4.7 template prefills `<think>`) ---------------------

GLM47_PROMPT = "[gMASK]<sop><|user|>\nWhat is the capital of France?<|assistant|>\n<think>"


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    VLLM_THINK_CASES,
)
def test_vllm_glm47_prefilled_reasoning(
    gen: int, text: str, reasoning: str | None, content: str | None
) -> None:
    # GLM prompts may prefill <think> (docs/parser-selection.md: parsing starts inside reasoning)
    msg = run(text, gen, prompt=GLM47_PROMPT, tool_parser=None, reasoning_parser="glm45")
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_glm47_prefilled_reasoning_then_call(gen: int) -> None:
    text = "Need the weather.</think>" + inline("get_weather", ("city", "Paris"))
    msg = run(text, gen, prompt=GLM47_PROMPT, tools=[WEATHER], **G)
    assert (msg.reasoning_content, msg.content) == ("Need the weather.", None)
    assert calls(msg) == [("get_weather", {"city": "Paris"})]
    # a call start also ends reasoning that was never closed (docs/parsers.md "Common rules")
    msg = run(
        "Need the weather." + inline("get_weather", ("city", "Paris")),
        gen,
        prompt=GLM47_PROMPT,
        tools=[WEATHER],
        **G,
    )
    assert (msg.reasoning_content, calls(msg)) == (
        "Need the weather.",
        [("get_weather", {"city": "Paris"})],
    )


def test_vllm_glm47_final_delta_is_not_cumulative_v2() -> None:
    full = (
        "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Beijing</arg_value>"
        "<arg_key>date</arg_key><arg_value>2025-08-01</arg_value></tool_call>"
    )
    cuts = [
        len("<tool_call>get_weather\n"),
        full.index("<arg_value>Beijing"),
        full.index("<arg_key>date"),
    ]
    cuts += [full.index("2025-08") + 7, full.index("</tool_call>"), len(full)]
    chunks = [full[a:b] for a, b in zip([0, *cuts[:-1]], cuts, strict=True)]
    s = feed(chunks, 2, tools=[CITY_DATE], **G)
    for fragment in s.fragments[0][1:]:
        assert not fragment.lstrip().startswith("{")  # deltas, never the whole object again
    assert s.call_args(0) == {"city": "Beijing", "date": "2025-08-01"}
