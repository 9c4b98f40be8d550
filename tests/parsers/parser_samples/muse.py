"""Muse samples (`muse`, V2 only) for the shared property tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

M = "muse"
V2 = (2,)
WEATHER = ({"type": "function", "function": {"name": "get_weather", "parameters": {}}},)


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in params.items())
    return f'<atem:invoke name="{name}">\n{body}</atem:invoke>\n'


def tool_message(recipient: str, *invokes: str) -> str:
    return (
        f"<|start|>assistant to={recipient}<|message|><atem:function_calls>\n"
        + "".join(invokes)
        + "</atem:function_calls>"
    )


SPEC = (
    " to=self<|message|>Look it up.<|eom|>"
    + tool_message("get_weather", invoke("get_weather", location="Paris"))
    + "<|eom|><|start|>assistant to=user<|message|>It's 18C.<|eot|>"
)

SAMPLES: list[Sample] = [
    Sample("muse-spec", SPEC, M, M, generations=V2, calls=1),
    Sample("muse-plain", "Just a direct answer, no framing.", M, M, generations=V2, calls=0),
    Sample(
        "muse-two-calls-nested-non-ascii",
        " to=self<|message|>Два вызова ☀<|eom|>"
        + tool_message(
            "get_weather.get_weather",
            invoke("get_weather.get_weather", city="Zürich", days="3"),
            invoke("get_time", opts='{"units": ["C", "F"], "exact": true}', note=" raw text "),
        )
        + "<|eom|><|start|>assistant to=user<|message|>Voilà.<|eot|>",
        M,
        M,
        generations=V2,
        tools=WEATHER,
        calls=2,
    ),
    Sample(
        "muse-atem-in-reasoning-is-text",
        ' to=self<|message|>I could write <atem:invoke name="evil">x</atem:invoke>.<|eom|>'
        "<|start|>assistant to=user<|message|>No call.<|eot|>",
        M,
        M,
        generations=V2,
        calls=0,
    ),
    Sample(
        "muse-missing-eom-before-tool-header",
        " to=self<|message|>thinking to=f<|message|>" + invoke("f"),
        M,
        M,
        generations=V2,
        calls=1,
    ),
    Sample(
        "muse-unterminated-invoke",
        tool_message("f", '<atem:invoke name="f"><atem:parameter name="q">abc'),
        M,
        M,
        generations=V2,
    ),
    Sample(
        "muse-malformed-invoke",
        tool_message("f", '<atem:invoke name="f"><junk/></atem:invoke>') + "<|eot|>",
        M,
        M,
        generations=V2,
    ),
    Sample(
        "muse-guided-json-after-reasoning",
        ' to=self<|message|>Oslo.<|eom|>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
        M,
        M,
        generations=V2,
        tools=WEATHER,
        tool_choice="required",
        calls=1,
    ),
    Sample(
        "muse-prefilled-self",
        "Plan.<|eom|><|start|>assistant to=user<|message|>Done.<|eot|>",
        M,
        M,
        generations=V2,
        prompt="<|start|>user<|message|>hi<|eot|><|start|>assistant to=self<|message|>",
        calls=0,
    ),
]

# Muse has no V1, so its openers are marked is_call=False: the V1 jail comparison is skipped.
OPENERS: list[Opener] = [
    Opener(M, M, "<|start|>assistant to=get_weather<|message|>", is_call=False),
    Opener(M, M, "to=get_weather<|message|>", is_call=False),
    Opener(M, M, "<|start|>", is_call=False),
]

LOSSLESS: list[Lossless] = [
    Lossless(
        M,
        M,
        (
            CallPiece(
                tool_message(
                    "get_weather", invoke("get_weather", city="Zürich", n="2", tags='["a"]')
                )
                + "<|eom|>",
                "get_weather",
                {"city": "Zürich", "n": 2, "tags": ["a"]},
            ),
            CallPiece(tool_message("noop", invoke("noop")) + "<|eom|>", "noop", {}),
        ),
        reasoning=("<|start|>assistant to=self<|message|>", "<|eom|>"),
        quoted=("<|start|>", "<|start|>assistant to=get_weather<|message|>", "<|message|>"),
        generations=V2,
        broken=(
            tool_message(
                "f",
                '<atem:invoke name=""><atem:parameter name="a">1</atem:parameter></atem:invoke>',
            )
            + "<|eom|>",
        ),
        markup=r"<\|start\|>[^<]*|<\|(?:message|eom|eot)\|>|<[^<>]*>",
    ),
]
