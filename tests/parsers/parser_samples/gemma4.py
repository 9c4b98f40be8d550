"""Gemma 4 samples (tool and reasoning parser `gemma4`) for the shared property tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

G = "gemma4"
D = '<|"|>'  # Gemma's string delimiter

SPEC = (
    f"<|channel>thought\nstep<channel|><|tool_call>call:get_weather{{location:{D}Tokyo{D},"
    "count:42}<tool_call|>"
)

SAMPLES: list[Sample] = [
    Sample("gemma4-spec", SPEC, G, G, thinking=True, calls=1),
    Sample("gemma4-spec-thinking-off", SPEC, G, G, calls=1),
    Sample(
        "gemma4-text-around-two-calls",
        f"Let me check both. <|tool_call>call:get_weather{{city:{D}Paris, France{D},days:3,"
        f"opts:{{units:[{D}C{D},{D}F{D}],exact:true,ratio:-0.5,none:nil}}}}<tool_call|> and "
        f"<|tool_call>call:get_time{{tz:{D}Europe/Zürich ☀{D}}}<tool_call|>\nDone.",
        G,
        calls=2,
    ),
    Sample(
        "gemma4-reasoning-then-calls",
        f"<|channel>thought\nNeed two lookups. 日本語<channel|>On it."
        f"<|tool_call>call:a{{}}<tool_call|><|tool_call>call:b{{q:{D}x{D},flag:,n:3.5}}"
        "<tool_call|>",
        G,
        G,
        thinking=True,
        calls=2,
    ),
    Sample(
        "gemma4-call-ends-reasoning",
        f'<|channel>thought\nhmm "quoted" it\'s<|tool_call>call:f{{s:{D}<b>{{x}}</b>{D}}}'
        "<tool_call|>",
        G,
        G,
        thinking=True,
        calls=1,
    ),
    Sample(
        "gemma4-string-holds-markers",
        f"<|tool_call>call:write{{body:{D}a <tool_call|> b <|tool_call> c{D}}}<tool_call|>after",
        G,
    ),  # V2 reads the string; the V1 jail ends at the first `<tool_call|>` (test_gemma4.py)
    Sample("gemma4-unterminated", f"Sure <|tool_call>call:f{{q:{D}abc", G, G),
    Sample("gemma4-malformed", "<|tool_call>call:f{no colon here}<tool_call|> after", G, calls=0),
    Sample("gemma4-not-a-call", "<|tool_call>hello<tool_call|> after", G, calls=0),
    Sample(
        "gemma4-malformed-then-call",
        f"<|tool_call>call:f{{x:1<|tool_call>call:g{{y:{D}ok{D}}}<tool_call|>",
        G,
    ),
    Sample(
        "gemma4-prefilled-reasoning",
        "\nstep one<channel|>The answer.",
        G,
        G,
        prompt="<start_of_turn>model\n<|channel>thought",
        calls=0,
    ),
]

OPENERS: list[Opener] = [
    Opener(G, G, "<|tool_call>"),
    Opener(G, G, "<|tool_call>call:get_weather{"),
    Opener(G, G, "<|channel>", thinking=True, is_call=False),
]

LOSSLESS: list[Lossless] = [
    # Thinking is off by default for Gemma 4 (the test passes no `thinking`): no reasoning
    # pieces here; tests/parsers/families/test_gemma4.py covers reasoning interleavings.
    Lossless(
        G,
        G,
        (
            CallPiece(
                f"<|tool_call>call:get_weather{{city:{D}Zürich{D},n:2,tags:[{D}a{D}]}}<tool_call|>",
                "get_weather",
                {"city": "Zürich", "n": 2, "tags": ["a"]},
            ),
            CallPiece("<|tool_call>call:noop{}<tool_call|>", "noop", {}),
        ),
        reasoning=None,
        quoted=("<|tool_call>",),
        broken=("<|tool_call>call:{a:1}<tool_call|>", "<|tool_call>call:{}<tool_call|>"),
    ),
]
