"""Qwen3 samples (hermes, qwen3_coder, reasoning qwen3) for the shared property tests."""

from __future__ import annotations

from typing import Any

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
        broken=('<tool_call>{"name": ""}</tool_call>', "<tool_call>not json</tool_call>"),
    ),
]

C = "qwen3_coder"
CODER_TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "calc",
            "parameters": {
                "type": "object",
                "properties": {
                    "x": {"type": "number"},
                    "n": {"type": "integer"},
                    "ok": {"type": "boolean"},
                    "opts": {"type": "object"},
                    "note": {"type": "string"},
                },
            },
        },
    },
)

WRITE_FILE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
}

SAMPLES += [
    Sample(
        "qwen3-coder-spec",
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nSan Francisco\n"
        "</parameter>\n</function>\n</tool_call>",
        C,
        R,
        calls=1,
    ),
    Sample(
        "qwen3-coder-typed-two-calls",
        "<think>compute</think>Sure.\n<tool_call>\n<function=calc>\n<parameter=x>\n-0.5\n"
        "</parameter>\n<parameter=n>\n42\n</parameter>\n<parameter=ok>\nTrue\n</parameter>\n"
        '<parameter=opts>\n{"a": [1, 2.50, 1e-3]}\n</parameter>\n<parameter=note>\n'
        "Zürich &amp; Genève\nline 2\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=calc>\n<parameter=x>\n2.50\n</parameter>\n</function>\n"
        "</tool_call>\nDone.",
        C,
        R,
        tools=CODER_TOOLS,
        calls=2,
    ),
    Sample(
        "qwen3-coder-bare-function",
        "Text <function=calc>\n<parameter=note>\nhi\n</parameter>\n</function> tail",
        C,
        R,
        calls=1,
    ),
    Sample(
        "qwen3-coder-unterminated",
        "<tool_call>\n<function=calc>\n<parameter=note>\nabc",
        C,
        R,
    ),
    Sample("qwen3-coder-malformed", "<tool_call>\nnot a call\n</tool_call>", C, R, calls=0),
    # values holding tag-like text (vLLM's structural value ends); V2 only: V1 jails up to
    # the first `</tool_call>`, which the nested literal contains
    Sample(
        "qwen3-coder-nested-literal-call",
        "<tool_call>\n<function=write_file>\n<parameter=path>\nfixture.py\n</parameter>\n"
        '<parameter=content>\ndoc = """\n<tool_call>\n<function=write_file>\n'
        "<parameter=path>\nx.txt\n</parameter>\n<parameter=content>\nhello\n</parameter>\n"
        '</function>\n</tool_call>\n"""\n</parameter>\n</function>\n</tool_call>\nDone.',
        C,
        R,
        generations=(2,),
        tools=(WRITE_FILE,),
        calls=1,
    ),
    Sample(
        "qwen3-coder-param-like-lines",
        '<tool_call>\n<function=write_file>\n<parameter=content>\nT = """\n</parameter>\n'
        '<parameter=new_string>\nx\n</parameter>\n"""\n</parameter>\n<parameter=path>\n'
        "a.py\n</parameter>\n</function>\n</tool_call>",
        C,
        R,
        tools=(WRITE_FILE,),
        calls=1,
    ),
    Sample(
        "qwen3-coder-missing-param-close",
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter1>\n"
        "<parameter=content>\nhi\n</parameter>\n</function>\n</tool_call>",
        C,
        R,
        tools=(WRITE_FILE,),
        calls=1,
    ),
    Sample(
        "qwen3-coder-bare-with-stray-close",
        "Checking.\n\n<function=calc>\n<parameter=n>\n3\n</parameter>\n</function>\n"
        "</tool_call>\nok",
        C,
        R,
        tools=CODER_TOOLS,
        calls=1,
    ),
    Sample(
        "qwen3-reasoning-ends-at-call",
        "I need the file.\n\n<tool_call>\n<function=calc>\n<parameter=n>\n1\n</parameter>\n"
        "</function>\n</tool_call>",
        C,
        R,
        prompt="<|im_start|>assistant\n<think>\n",
        calls=1,
    ),
]

OPENERS += [Opener(C, R, "<tool_call>"), Opener(C, R, "<function=")]

LOSSLESS += [
    Lossless(
        C,
        R,
        (
            CallPiece(
                "<tool_call>\n<function=calc>\n<parameter=note>\nZürich\n</parameter>\n"
                "</function>\n</tool_call>",
                "calc",
                {"note": "Zürich"},
            ),
            CallPiece("<function=ping>\n</function>", "ping", {}),
            # a newline inside the function tag (the two-way split reproducer)
            CallPiece(
                "<tool_call>\n<function=get_weather\n>\n<parameter=city>\nParis\n</parameter>\n"
                "</function>\n</tool_call>",
                "get_weather",
                {"city": "Paris"},
            ),
        ),
        quoted=("<tool_call>", "<function=", "<think>"),
        broken=("<tool_call>\n<function=>\n</function>\n</tool_call>",),
    ),
]
