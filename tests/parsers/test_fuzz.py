"""Random marker soup for every family and generation: no exception, stream == batch for
random chunkings and for every two-way split, no character of prose duplicated (content +
reasoning never longer than the output), no call with a blank name.

The soup holds each family's markers, their halves (a marker cut anywhere), tags with a newline
inside (`<function=f\n>`), forced tool choices (guided JSON starts `{`, `[`, `<`) and prompts
that do or do not open reasoning (wide enough to find the known reproducers on parsers that
lack their fixes)."""

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
        '{"name": ""}',
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
    "kimi_k2": [
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "functions.f:0",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        '{"a": 1}',
        '"x',
    ],
    "kimi_k3": [
        "<|open|>think<|sep|>",
        "<|close|>think<|sep|>",
        "<|open|>response<|sep|>",
        "<|close|>response<|sep|>",
        "<|open|>tools<|sep|>",
        "<|close|>tools<|sep|>",
        '<|open|>call tool="f" index="1"<|sep|>',
        "<|open|>call<|sep|>",
        "<|close|>call<|sep|>",
        '<|open|>argument key="a" type="number"<|sep|>',
        "<|close|>argument<|sep|>",
        "<|close|>message<|sep|>",
        "<|end_of_msg|>",
        "k",
        "hello",
    ],
    "gemma4": [
        "<|tool_call>",
        "<tool_call|>",
        "call:f{",
        "call:{",
        "a:",
        '<|"|>',
        "<|channel>thought\n",
        "<channel|>",
        "<turn|>",
        "42",
        ",",
    ],
    "muse": [
        "<|start|>assistant",
        " to=self",
        " to=f",
        " to=user",
        "<|message|>",
        "<|eom|>",
        "<|eot|>",
        '<atem:invoke name="f">',
        '<atem:invoke name="">',
        '<atem:parameter name="a">',
        "</atem:parameter>",
        "</atem:invoke>",
    ],
}
# Qwen3-Coder tags with a newline inside (a known split reproducer), a real call's parts
PIECES["qwen3_coder"] += ["<function=get_weather\n>", "<function=get_weather\n", "\nParis\n"]


def _halves(pieces: list[str]) -> list[str]:
    """Each piece and, for markers, both halves: a marker cut anywhere by a chunk edge or the
    end of output."""
    out = list(pieces)
    for p in pieces:
        if len(p) > 3:
            out += [p[: len(p) // 2], p[len(p) // 2 :]]
    return out


REASONING = {
    "hermes": "qwen3",
    "qwen3_coder": "qwen3",
    "glm47": "glm45",
    "deepseek_v4": "deepseek_v4",
    "deepseek_v41": "deepseek_v41",
    "kimi_k2": "kimi_k25",
    "kimi_k3": "kimi_k3",
    "gemma4": "gemma4",
    "muse": "muse",
}
V2_ONLY = ("deepseek_v41", "muse")
CASES = [(t, g) for t in PIECES for g in ((2,) if t in V2_ONLY else (1, 2))]
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
@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_marker_soup(tool: str, gen: int, data: st.DataObject) -> None:
    soup = _halves(PIECES[tool]) + COMMON
    parts = data.draw(st.lists(st.sampled_from(soup), max_size=25), label="parts")
    # forced choices: guided JSON starts the answer (or almost does)
    lead = data.draw(
        st.sampled_from(
            ["", "", "{", "[", '{"name": "f", "arguments": ', '{"name": "", "arguments": {}}']
        )
    )
    text = lead + "".join(parts)
    choice = data.draw(
        st.sampled_from(
            [None, "none", "required", {"type": "function", "function": {"name": "f"}}]
        ),
        label="tool_choice",
    )
    kw = {
        "tool_parser": tool,
        "generation": gen,
        "tools": TOOLS,
        "tool_choice": choice,
        "thinking": data.draw(st.sampled_from([None, False, True]), label="thinking"),
        # a prompt that opens nothing ("x": the V4.1 batch-only rule stays out) or none
        "prompt": data.draw(st.sampled_from(["x", None]), label="prompt")
        if tool != "deepseek_v41"
        else "x",
        "reasoning_parser": data.draw(st.sampled_from([REASONING[tool], None]), label="rp"),
    }
    batch = parse(text, id_factory=counter_ids(), **kw)  # type: ignore[arg-type]
    assert all(c.name.strip() for c in batch.tool_calls)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts")))
    chunks = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    assert stream(chunks, id_factory=counter_ids(), **kw) == batch  # type: ignore[arg-type]
    for i in range(1, len(text)):
        two = stream([text[:i], text[i:]], id_factory=counter_ids(), **kw)  # type: ignore[arg-type]
        assert two == batch, f"split at {i}"
    assert len(batch.content or "") + len(batch.reasoning_content or "") <= len(text)
