"""Kimi K2 / K2.5 samples (tool parser kimi_k2, reasoning kimi_k25) for the shared tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

T = "kimi_k2"
R = "kimi_k25"
SB = "<|tool_calls_section_begin|>"
SE = "<|tool_calls_section_end|>"
# A prompt that already closed the reasoning block: the output starts in the answer.
CLOSED = "<|im_assistant|>assistant<|im_middle|><think></think>"


def call(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


SPEC = (
    "<think>Let me check.</think>"
    + SB
    + call("functions.get_weather:0", '{"location":"Paris"}')
    + SE
)

SAMPLES: list[Sample] = [
    Sample("kimi_k2-spec", SPEC, T, R, calls=1),
    Sample(
        "kimi_k2-text-around-several-calls",
        "I'll compare both. "
        + SB
        + "\n"
        + call("functions.get_weather:0", '{"city": "Beijing", "days": 3}')
        + "\n"
        + call("functions.get_news:1", '{"topic": "tech", "opts": {"langs": ["en", "zh"]}}')
        + "\n"
        + SE
        + " Then I summarize.",
        T,
        calls=2,
    ),
    Sample(
        "kimi_k2-reasoning-then-calls-non-ascii",
        "<think>Météo à Zürich ☀ — 東京も</think>Je vérifie."
        + SB
        + call("functions.météo.lookup:0", '{"ville": "Zürich", "note": "☀ 東京"}')
        + SE,
        T,
        R,
        calls=1,
    ),
    Sample(
        "kimi_k2-tool-marker-ends-unclosed-reasoning",
        "I should read that file"
        + SB
        + call("functions.read_file:0", '{"path": "a.txt", "lines": [1, 20]}')
        + SE,
        T,
        R,
        calls=1,
    ),
    Sample(
        "kimi_k2-empty-arguments-singular-section",
        "<|tool_call_section_begin|>"
        + call("functions.get_time:0", "{}")
        + call("functions.list-tasks:1", "")
        + "<|tool_call_section_end|>",
        T,
        calls=2,
    ),
    Sample(
        "kimi_k2-nested-json-and-lookalike",
        SB
        + call(
            "functions.deploy:0",
            '{"env": "prod", "services": [{"name": "api", "cfg": {"mem": "2Gi", "on": true}}],'
            ' "note": "ends with <|tool_call_end|> text", "ratio": -0.5e-3}',
        )
        + SE,
        T,
        calls=1,
    ),
    Sample(
        "kimi_k2-bare-call-without-section",
        "Sure. " + call("functions.search:0", '{"q": "rust"}') + " Done.",
        T,
        calls=1,
    ),
    Sample(
        "kimi_k2-missing-section-end",
        "x " + SB + call("functions.a:0", '{"n": 1}') + call("functions.b:1", '{"n": 2}'),
        T,
        calls=2,
    ),
    Sample(
        "kimi_k2-malformed-then-valid",
        SB + call("functions.broken.0", '{"a": 1}') + call("functions.ok:1", '{"b": 2}') + SE,
        T,
        calls=1,
    ),
    Sample(
        "kimi_k2-unterminated-call",
        "Checking " + SB + "<|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Bei',
        T,
        R,
    ),
    Sample(
        "kimi_k2-invalid-json-arguments",
        SB + call("functions.f:0", "{invalid json here}") + SE + "after",
        T,
    ),
    Sample(
        "kimi_k2-bare-counter-id-named-by-tools",
        "Let me check." + SB + call("0", '{"city": "Tokyo", "unit": "celsius"}') + SE,
        T,
        tools=(
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {}, "unit": {}}},
                },
            },
            {
                "type": "function",
                "function": {"name": "read_file", "parameters": {"properties": {"path": {}}}},
            },
        ),
        calls=1,
    ),
    Sample(
        # JSON breaks before a quoted end-marker look-alike: every chunking must agree on
        # where the verbatim scan starts
        "kimi_k2-json-error-before-quoted-lookalike",
        call("functions.f:0", 'bad id{"x": [1, {"y": "<|tool_call_end|>"}]}') + " after",
        T,
        R,
    ),
    Sample("kimi_k2-thinking-off", "<think>hm</think>Answer: 42", T, R, thinking=False),
    Sample("kimi_k2-prefix-only", "<|tool_calls_sec", T, R),
]

OPENERS: list[Opener] = [
    Opener(T, None, SB),
    Opener(T, None, "<|tool_call_begin|>"),
    Opener(T, R, SB, thinking=False),
    Opener(T, R, "<think>", prompt=CLOSED, is_call=False),
]

LOSSLESS: list[Lossless] = [
    Lossless(
        T,
        None,
        (
            CallPiece(
                SB + call("functions.get_weather:0", '{"city": "Zürich", "n": 2}') + SE,
                "get_weather",
                {"city": "Zürich", "n": 2},
            ),
            CallPiece(call("functions.ns.noop:3", "{}"), "ns.noop", {}),
            CallPiece(
                "<|tool_call_section_begin|>\n"
                + call("functions.tag:0", '{"t": "<|tool_call_end|>", "l": [1, null]}')
                + "\n<|tool_call_section_end|>",
                "tag",
                {"t": "<|tool_call_end|>", "l": [1, None]},
            ),
        ),
        reasoning=None,
        quoted=(SB, "<|tool_call_begin|>"),
        broken=(SB + call("functions.:0", "{}") + SE,),
    ),
    Lossless(
        T,
        R,
        (CallPiece(SB + call("functions.f:0", '{"a": "b"}') + SE, "f", {"a": "b"}),),
        quoted=(SB, "<think>"),
        prompt=CLOSED,
        broken=(call("functions.:0", "{}"),),
    ),
]
