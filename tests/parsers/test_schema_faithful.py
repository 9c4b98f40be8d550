"""Arguments follow the schema and the model's text (docs/parsers.md "Arguments").

A parameter declared `string` is always a JSON string, even when its text looks like JSON;
argument text is never entity-decoded (the chat templates write values raw).
"""

from __future__ import annotations

import json

import pytest
from parser_check import run, tool

GENS = pytest.mark.parametrize("gen", [1, 2])
WRITE = [tool("write_file", path="string", content="string")]
PKG = '{"version":3}'
HTML = "<p>Fish &amp; chips &lt;3 &quot;x&quot;</p>"


def _args(msg: object) -> list[tuple[str, object]]:
    return [(c.name, json.loads(c.arguments)) for c in msg.tool_calls]  # type: ignore[attr-defined]


@GENS
def test_glm_string_parameter_holding_json_stays_a_string(gen: int) -> None:
    text = (
        "<tool_call>write_file<arg_key>path</arg_key><arg_value>a.json</arg_value>"
        f"<arg_key>content</arg_key><arg_value>{PKG}</arg_value></tool_call>"
    )
    msg = run(text, gen, tool_parser="glm47", tools=WRITE)
    expected = '{"path":"a.json","content":"{\\"version\\":3}"}'
    assert msg.tool_calls[0].arguments == expected
    for value in ('"quoted"', "[1, 2]", '"\\C|\\."'):
        text = (
            "<tool_call>write_file<arg_key>content</arg_key>"
            f"<arg_value>{value}</arg_value></tool_call>"
        )
        msg = run(text, gen, tool_parser="glm47", tools=WRITE)
        assert _args(msg) == [("write_file", {"content": value})]


@GENS
def test_glm_json_parsed_for_non_string_and_undeclared(gen: int) -> None:
    tools = [tool("f", cfg="object")]
    text = (
        '<tool_call>f<arg_key>cfg</arg_key><arg_value>{"a": 1}</arg_value>'
        "<arg_key>extra</arg_key><arg_value>[1]</arg_value></tool_call>"
    )
    msg = run(text, gen, tool_parser="glm47", tools=tools)
    assert _args(msg) == [("f", {"cfg": {"a": 1}, "extra": [1]})]


@GENS
def test_glm_no_entity_decoding(gen: int) -> None:
    text = (
        f"<tool_call>write_file<arg_key>content</arg_key><arg_value>{HTML}</arg_value></tool_call>"
    )
    msg = run(text, gen, tool_parser="glm47", tools=WRITE)
    assert _args(msg) == [("write_file", {"content": HTML})]
    key = "<tool_call>f<arg_key>a&amp;b</arg_key><arg_value>1&lt;2</arg_value></tool_call>"
    assert _args(run(key, gen, tool_parser="glm47")) == [("f", {"a&amp;b": "1&lt;2"})]


@GENS
def test_qwen3_coder_no_entity_decoding(gen: int) -> None:
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.html\n</parameter>\n"
        f"<parameter=content>\n{HTML}\n</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, tool_parser="qwen3_coder", tools=WRITE)
    assert _args(msg) == [("write_file", {"path": "a.html", "content": HTML})]
    # undeclared and typed parameters are not decoded either
    text = "<function=f>\n<parameter=q>\na &amp; b\n</parameter>\n</function>"
    assert _args(run(text, gen, tool_parser="qwen3_coder")) == [("f", {"q": "a &amp; b"})]


@GENS
def test_qwen3_coder_string_parameter_holding_json_stays_a_string(gen: int) -> None:
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=content>\n"
        f"{PKG}\n</parameter>\n</function>\n</tool_call>"
    )
    msg = run(text, gen, tool_parser="qwen3_coder", tools=WRITE)
    assert _args(msg) == [("write_file", {"content": PKG})]


def test_muse_string_parameter_holding_json_stays_a_string() -> None:
    text = (
        ' to=write_file<|message|><atem:invoke name="write_file">'
        f'<atem:parameter name="content">{PKG}</atem:parameter>'
        '<atem:parameter name="path">"a.json"</atem:parameter>'
        "</atem:invoke><|eom|>"
    )
    msg = run(text, 2, tool_parser="muse", tools=WRITE)
    assert _args(msg) == [("write_file", {"content": PKG, "path": '"a.json"'})]
    # undeclared: JSON-looking text is parsed
    text = (
        ' to=f<|message|><atem:invoke name="f"><atem:parameter name="n">42</atem:parameter>'
        "</atem:invoke><|eom|>"
    )
    assert _args(run(text, 2, tool_parser="muse")) == [("f", {"n": 42})]


@GENS
def test_kimi_k3_declared_string_wins_over_type_attribute(gen: int) -> None:
    text = (
        '<|open|>tools<|sep|><|open|>call tool="write_file" index="1"<|sep|>'
        '<|open|>argument key="content" type="object"<|sep|>{"version":3}<|close|>argument<|sep|>'
        '<|open|>argument key="n" type="number"<|sep|>42<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )
    msg = run(text, gen, tool_parser="kimi_k3", tools=WRITE, prompt="x")
    assert _args(msg) == [("write_file", {"content": PKG, "n": 42})]


@GENS
def test_dsml_declared_string_wins_over_string_attribute(gen: int) -> None:
    text = (
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="write_file">\n'
        f'<｜DSML｜parameter name="content" string="false">{PKG}</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="n" string="false">42</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    )
    msg = run(text, gen, tool_parser="deepseek_v4", tools=WRITE)
    assert _args(msg) == [("write_file", {"content": PKG, "n": 42})]
