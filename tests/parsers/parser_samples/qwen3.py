"""Qwen3 samples (hermes, qwen3_coder, reasoning qwen3) for the shared property tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

H = "hermes"
R = "qwen3"

SAMPLES: list[Sample] = [
    Sample(
        "hermes-spec",
        '<think>Need weather.</think>Checking.<tool_call>\n{"name":"get_weather",'
        '"arguments":{"location":"Paris"}}\n</tool_call>',
        H,
        R,
        calls=1,
    ),
    Sample(
        "hermes-two-calls-text-around",
        'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris",'
        ' "days": 3, "opts": {"units": ["C", "F"], "exact": true}}}\n</tool_call>\nand\n'
        '<tool_call>\n{"name": "get_time", "parameters": {"tz": "Europe/Zürich ☀"}}\n'
        "</tool_call>\nDone.",
        H,
        R,
        calls=2,
    ),
    Sample(
        "hermes-string-arguments",
        '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>',
        H,
        calls=1,
    ),
    Sample(
        "hermes-unterminated",
        'Sure <tool_call>{"name": "f", "arguments": {"q": "abc',
        H,
        R,
    ),
    Sample("hermes-malformed", "<tool_call>not json</tool_call> after", H, R, calls=0),
    Sample(
        "hermes-tool-ends-reasoning",
        '<think>hmm "quoted" it\'s<tool_call>{"name":"f","arguments":{}}</tool_call>',
        H,
        R,
        calls=1,
    ),
]

OPENERS: list[Opener] = [
    Opener(H, R, "<tool_call>"),
    Opener(H, R, "<think>", is_call=False),
]

LOSSLESS: list[Lossless] = [
    Lossless(
        H,
        R,
        (
            CallPiece(
                '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "n": 2}}\n'
                "</tool_call>",
                "get_weather",
                {"city": "Zürich", "n": 2},
            ),
            CallPiece('<tool_call>{"name":"noop","arguments":{}}</tool_call>', "noop", {}),
        ),
        quoted=("<tool_call>", "<think>", "</think>"),
    ),
]
