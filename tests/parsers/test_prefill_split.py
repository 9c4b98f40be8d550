"""The prefill split case: the prompt ends in `<think>`, the output's `</think>` is split
across chunks (`…thought<` + `/think>`) and a call follows: the call is parsed, not left in
reasoning. Every `<think>` family of this module set, both generations where they exist."""

from __future__ import annotations

import pytest
from parser_check import calls
from parser_samples.deepseek import dsml

from parsers import stream

CASES = [
    ("hermes", "qwen3", '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', (1, 2)),
    (
        "qwen3_coder",
        "qwen3",
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
        (1, 2),
    ),
    (
        "glm47",
        "glm45",
        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
        (1, 2),
    ),
    ("deepseek_v4", "deepseek_v4", dsml([("f", [("a", "1", True)])]), (1, 2)),
    ("deepseek_v41", "deepseek_v41", dsml([("f", [("a", "1", True)])], v41=True), (2,)),
]
PARAMS = [(t, r, c, g) for t, r, c, gens in CASES for g in gens]


@pytest.mark.parametrize(("tool", "reasoning", "call", "gen"), PARAMS)
def test_split_close_marker_then_call(tool: str, reasoning: str, call: str, gen: int) -> None:
    prompt = "<|user|>weather?<|assistant|>\n<think>\n"
    msg = stream(
        ["The user asks. thought<", "/think>", call],
        tool_parser=tool,
        reasoning_parser=reasoning,
        prompt=prompt,
        generation=gen,
    )
    assert msg.route == ("parser_v2" if gen == 2 else "legacy_jail")
    assert msg.reasoning_content == "The user asks. thought"
    assert msg.content is None
    assert [name for name, _ in calls(msg)] == ["f"]
    assert msg.finish_reason == "tool_calls"
