"""Cut-off calls are never repaired; a call with a blank name is not a call.

Under V2 a call whose name went out stays a call and its `arguments` are exactly the fragments
streamed, unterminated where the model stopped (as OpenAI returns them with finish_reason
`length`); batch equals stream (`run` checks every character split and a 3-way split). V1
returns the text as content.
"""

from __future__ import annotations

import pytest
from parser_check import run, tool

WEATHER = [tool("get_weather", city="string", days="integer")]
Q = "<tool_call>\n<function=get_weather>\n<parameter=city>\nBei"
K2 = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Bei'
)
K3 = (
    '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Bei'
)
DSML = (
    '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Bei'
)
# (tool parser, output cut by `length`, arguments as streamed, extra request fields)
CUT = [
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Bei', '{"city": "Bei'),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"days": 1', "{"),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": ', ""),
    ("qwen3_coder", Q, '{"city":"Bei'),
    ("glm47", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Bei", '{"city":"Bei'),
    ("glm47", "<tool_call>get_weather<arg_key>days</arg_key><arg_value>4", "{"),
    ("deepseek_v4", DSML, '{"city":"Bei'),
    ("kimi_k2", K2, '{"city": "Bei'),
    ("kimi_k3", K3, '{"city":"Bei'),
    ("gemma4", '<|tool_call>call:get_weather{city:<|"|>Bei', '{"city":"Bei'),
    ("gemma4", "<|tool_call>call:get_weather{days:4", "{"),
    (
        "muse",
        ' to=get_weather<|message|><atem:invoke name="get_weather"><atem:parameter name="city">Bei',
        '{"city":"Bei',
    ),
]


def _kw(parser: str) -> dict[str, object]:
    kw: dict[str, object] = {"tool_parser": parser, "tools": WEATHER}
    if parser == "kimi_k3":
        kw["prompt"] = "x"  # output starts at the top level, not inside reasoning
    return kw


@pytest.mark.parametrize(("parser", "text", "streamed"), CUT, ids=lambda v: str(v)[:24])
def test_v2_cut_call_keeps_exactly_what_was_streamed(parser: str, text: str, streamed: str) -> None:
    for reason in ("length", "stop"):
        msg = run(text, 2, finish_reason=reason, **_kw(parser))
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_weather", streamed)]
        assert msg.content is None
        assert msg.finish_reason == ("length" if reason == "length" else "tool_calls")


@pytest.mark.parametrize(("parser", "text", "streamed"), CUT, ids=lambda v: str(v)[:24])
def test_v1_cut_call_is_content(parser: str, text: str, streamed: str) -> None:
    if parser == "muse":
        pytest.skip("Muse is V2 only")
    msg = run(text, 1, finish_reason="length", **_kw(parser))
    assert (msg.content, msg.tool_calls, msg.finish_reason) == (text, [], "length")


BLANK_NAMES = [
    ("hermes", '<tool_call>{"name": "", "arguments": {}}</tool_call>'),
    ("hermes", '<tool_call>{"name": "  ", "arguments": {"a": 1}}</tool_call>'),
    ("qwen3_coder", "<tool_call>\n<function=>\n</function>\n</tool_call>"),
    ("qwen3_coder", "<tool_call>\n<function= >\n</function>\n</tool_call>"),
    ("glm47", "<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"),
    ("glm47", "<tool_call> </tool_call>"),
    (
        "deepseek_v4",
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    ),
    (
        "kimi_k3",
        '<|open|>tools<|sep|><|open|>call tool="" index="1"<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
    ),
    ("gemma4", "<|tool_call>call:{a:1}<tool_call|>"),
]


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize(("parser", "text"), BLANK_NAMES, ids=lambda v: str(v)[:24])
def test_blank_name_is_not_a_call(parser: str, text: str, gen: int) -> None:
    msg = run(text, gen, **_kw(parser))
    assert msg.tool_calls == []
    assert msg.content  # the text is returned (lossless), never a nameless call


def test_muse_blank_invoke_name_is_not_a_call() -> None:
    text = (
        ' to=f<|message|><atem:invoke name=""><atem:parameter name="a">1</atem:parameter>'
        "</atem:invoke><|eom|>"
    )
    assert run(text, 2, tool_parser="muse").tool_calls == []


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize(
    "text", ['{"name": "", "arguments": {}}', '[{"name": " ", "arguments": {}}]']
)
@pytest.mark.parametrize("parser", ["hermes", "gemma4", "kimi_k3", "glm47"])
def test_forced_choice_blank_name_is_not_a_call(parser: str, text: str, gen: int) -> None:
    kw = _kw(parser)
    kw["prompt"] = "x"
    msg = run(text, gen, tool_choice="required", **kw)
    assert (msg.tool_calls, msg.content) == ([], text)
