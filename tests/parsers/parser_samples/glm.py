"""GLM samples (glm47 + reasoning glm45) for the shared property tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

T = "glm47"
R = "glm45"
TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "x": {"type": "number"},
                    "b": {"type": "boolean"},
                    "s": {"type": "string"},
                },
            },
        },
    },
)

SAMPLES: list[Sample] = [
    Sample(
        "glm-spec",
        "I'll check the weather for you. <tool_call>get_weather<arg_key>location</arg_key>"
        "<arg_value>Paris</arg_value></tool_call>",
        T,
        R,
        calls=1,
    ),
    Sample(
        "glm45-newlines-two-calls",
        "<think>Plan it.</think>\n\nOK.\n<tool_call>get_weather\n    <arg_key>city</arg_key>\n"
        "    <arg_value>北京</arg_value>\n    </tool_call>\n<tool_call>f\n<arg_key>n</arg_key>\n"
        "<arg_value>5</arg_value>\n<arg_key>x</arg_key>\n<arg_value>-0.5</arg_value>\n"
        "<arg_key>b</arg_key>\n<arg_value>true</arg_value>\n<arg_key>s</arg_key>\n"
        "<arg_value>a &amp; b</arg_value>\n<arg_key>j</arg_key>\n"
        '<arg_value>{"k": [1, {"z": null}]}</arg_value>\n</tool_call>',
        T,
        R,
        tools=TOOLS,
        calls=2,
    ),
    Sample("glm-no-arguments", "<tool_call>get_time</tool_call>", T, R, calls=1),
    Sample(
        "glm-unterminated",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beij",
        T,
        R,
    ),
    Sample("glm-malformed", "<tool_call> not a call\nat all </tool_call>", T, R, calls=0),
    Sample(
        "glm-literal-newline-separators",
        "Checking.<tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>杭州"
        "</arg_value>\\n</tool_call><tool_call>get_time\\n</tool_call>",
        T,
        R,
        calls=2,
    ),
    Sample(
        "glm-escaped-json-and-prefill",
        'Need todos.</think><tool_call>todo_write<arg_key>todos</arg_key><arg_value>[{\\"id\\": '
        '\\"1\\"}]</arg_value><arg_key>tags</arg_key><arg_value>a, b</arg_value></tool_call>',
        T,
        R,
        prompt="<|assistant|>\n<think>",
        tools=(
            {
                "type": "function",
                "function": {
                    "name": "todo_write",
                    "parameters": {
                        "type": "object",
                        "properties": {"todos": {"type": "array"}, "tags": {"type": "array"}},
                    },
                },
            },
        ),
        calls=1,
    ),
]

OPENERS: list[Opener] = [Opener(T, R, "<tool_call>"), Opener(T, R, "<think>", is_call=False)]

LOSSLESS: list[Lossless] = [
    Lossless(
        T,
        R,
        (
            CallPiece(
                "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Zürich</arg_value>"
                "</tool_call>",
                "get_weather",
                {"city": "Zürich"},
            ),
            CallPiece("<tool_call>noop\n</tool_call>", "noop", {}),
        ),
        quoted=("<tool_call>", "<think>", "</think>"),
        broken=(
            "<tool_call></tool_call>",
            "<tool_call>\n<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>",
        ),
    ),
]
