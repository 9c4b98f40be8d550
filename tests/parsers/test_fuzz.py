"""Random marker soup: no exception, stream == batch for random chunkings, and no character
of prose duplicated (content + reasoning never longer than the output)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import parse, stream
from parsers.ids import counter_ids

BAR = "\uff5c"
COMMON = ["<think>", "</think>", " ", "\n", "a", "é", '"', "'", "`", "```", "<", ">", "{", "}"]
PIECES = {
    "hermes": [
        "<tool_call>",
        "</tool_call>",
        '{"name": "f", "arguments": ',
        '{"a": ',
        "1",
        ", ",
        '"x"',
        "[",
        "]",
        "null",
        '"arguments": "{}"',
        "\\",
        "tru",
    ],
    "qwen3_coder": [
        "<tool_call>",
        "</tool_call>",
        "<function=f>",
        "<function=",
        "</function>",
        "<parameter=a>",
        "<parameter=",
        "</parameter>",
        "&amp;",
        "&",
        "null",
        "1e-3",
    ],
    "glm47": [
        "<tool_call>",
        "</tool_call>",
        "f",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "&lt;",
        '{"k": 1}',
        "42",
    ],
    "deepseek_v4": [
        f"<{BAR}DSML{BAR}tool_calls>",
        f"</{BAR}DSML{BAR}tool_calls>",
        f'<{BAR}DSML{BAR}invoke name="f">',
        f"</{BAR}DSML{BAR}invoke>",
        f'<{BAR}DSML{BAR}parameter name="a" string="true">',
        f'<{BAR}DSML{BAR}parameter name="b" string="false">',
        f"</{BAR}DSML{BAR}parameter>",
        "[1, 2]",
    ],
    "deepseek_v41": [
        f"<{BAR}DSML{BAR} calls>",
        f"</{BAR}DSML{BAR} calls>",
        f'<{BAR}DSML{BAR} invoke name="f">',
        f"</{BAR}DSML{BAR} invoke>",
        f'<{BAR}DSML{BAR} parameter name="a" string="true">',
        f"</{BAR}DSML{BAR} parameter>",
    ],
}
REASONING = {
    "hermes": "qwen3",
    "qwen3_coder": "qwen3",
    "glm47": "glm45",
    "deepseek_v4": "deepseek_v4",
    "deepseek_v41": "deepseek_v41",
}
CASES = [(t, g) for t in PIECES for g in ((2,) if t == "deepseek_v41" else (1, 2))]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            },
        },
    }
]


@pytest.mark.parametrize(("tool", "gen"), CASES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_marker_soup(tool: str, gen: int, data: st.DataObject) -> None:
    parts = data.draw(st.lists(st.sampled_from(PIECES[tool] + COMMON), max_size=25), label="parts")
    text = "".join(parts)
    choice = data.draw(
        st.sampled_from(
            [None, "none", "required", {"type": "function", "function": {"name": "f"}}]
        ),
        label="tool_choice",
    )
    kw = {
        "tool_parser": tool,
        "reasoning_parser": REASONING[tool],
        "generation": gen,
        "tools": TOOLS,
        "tool_choice": choice,
        "thinking": data.draw(st.sampled_from([None, False]), label="thinking"),
        "prompt": "<|assistant|>",  # known prompt: the V4.1 batch-only rule stays out
    }
    batch = parse(text, id_factory=counter_ids(), **kw)  # type: ignore[arg-type]
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts")))
    chunks = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    assert stream(chunks, id_factory=counter_ids(), **kw) == batch  # type: ignore[arg-type]
    assert len(batch.content or "") + len(batch.reasoning_content or "") <= len(text)
