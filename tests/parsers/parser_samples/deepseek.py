"""DeepSeek V4 and V4.1 (DSML) samples for the shared property tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

BAR = "\uff5c"
V4 = "deepseek_v4"
V41 = "deepseek_v41"


def dsml(
    calls: list[tuple[str, list[tuple[str, str, bool]]]], *, v41: bool = False, close: bool = True
) -> str:
    sp = " " if v41 else ""
    block = "calls" if v41 else "tool_calls"
    t = f"<{BAR}DSML{BAR}{sp}"
    out = f"{t}{block}>\n"
    for name, params in calls:
        out += f'{t}invoke name="{name}">\n'
        for key, value, is_string in params:
            flag = "true" if is_string else "false"
            out += (
                f'{t}parameter name="{key}" string="{flag}">{value}</{BAR}DSML{BAR}{sp}parameter>\n'
            )
        out += f"</{BAR}DSML{BAR}{sp}invoke>\n"
    if close:
        out += f"</{BAR}DSML{BAR}{sp}{block}>"
    return out


SPEC = dsml([("get_weather", [("location", "Paris", True)])])

SAMPLES: list[Sample] = [
    Sample("dsv4-spec", SPEC, V4, V4, calls=1),
    Sample(
        "dsv4-reasoning-two-invokes-text",
        "Need two lookups.</think>Checking both.\n"
        + dsml(
            [
                ("get_weather", [("city", " Zürich ", True), ("days", "3", False)]),
                (
                    "search",
                    [("q", '{"terms": ["a", "b"], "n": 2.50}', False), ("raw", "x<y", True)],
                ),
            ]
        )
        + "\nDone.",
        V4,
        V4,
        calls=2,
    ),
    Sample(
        "dsv4-tool-block-ends-reasoning",
        "thinking..." + dsml([("f", [])]),
        V4,
        V4,
        calls=1,
    ),
    Sample(
        "dsv4-missing-block-close",
        dsml([("a", [("q", "1", True)]), ("b", [])], close=False),
        V4,
        V4,
        calls=2,
    ),
    Sample(
        "dsv4-truncated-invoke",
        dsml([("a", [("q", "1", True)])], close=False)
        + f'<{BAR}DSML{BAR}invoke name="b">\n<{BAR}DSML{BAR}parameter name="x" string="true">tru',
        V4,
        V4,
    ),
    Sample(
        "dsv41-spec",
        "Answer first. " + dsml([("get_weather", [("location", "Paris", True)])], v41=True),
        V41,
        V41,
        generations=(2,),
        calls=1,
    ),
    Sample(
        "dsv41-prefilled",
        "Reason.</think>Sure." + dsml([("f", [("n", "7", False)])], v41=True),
        V41,
        V41,
        generations=(2,),
        prompt="<｜User｜>hi<｜Assistant｜><think>",
        calls=1,
    ),
]

OPENERS: list[Opener] = [
    Opener(V4, V4, f"<{BAR}DSML{BAR}tool_calls>", thinking=False),
    # a prompt without the `<think>` prefill (without one V4.1 starts inside it)
    Opener(V41, V41, f"<{BAR}DSML{BAR} calls>", prompt="<｜User｜>hi\n<｜Assistant｜>"),
    Opener(V41, V41, "<think>", prompt="<｜User｜>hi\n<｜Assistant｜>", is_call=False),
]

LOSSLESS: list[Lossless] = [
    Lossless(
        V4,
        V4,
        (
            CallPiece(
                dsml([("get_weather", [("city", "Zürich", True)])]),
                "get_weather",
                {"city": "Zürich"},
            ),
            CallPiece(dsml([("a", [("n", "[1, 2]", False)])]), "a", {"n": [1, 2]}),
        ),
        quoted=(f"<{BAR}DSML{BAR}tool_calls>", "<think>", "</think>"),
        lead_reasoning=True,
        broken=(dsml([("", [("a", "x", True)])]),),
    ),
    Lossless(
        V41,
        V41,
        (
            CallPiece(dsml([("f", [("q", "Zürich", True)])], v41=True), "f", {"q": "Zürich"}),
            CallPiece(dsml([("g", [])], v41=True), "g", {}),
        ),
        quoted=(f"<{BAR}DSML{BAR} calls>", "<think>"),
        generations=(2,),
        lead_reasoning=True,  # no prompt: the output starts in the template's `<think>`
        broken=(dsml([("", [("a", "x", True)])], v41=True),),
    ),
]
