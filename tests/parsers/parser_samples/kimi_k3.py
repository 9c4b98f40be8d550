"""Kimi K3 samples (tool and reasoning parser kimi_k3, channel grammar) for the shared tests."""

from __future__ import annotations

from parser_samples import CallPiece, Lossless, Opener, Sample

K = "kimi_k3"
OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
END = f"{CLOSE}message{SEP}<|end_of_msg|>"
# A prompt that does not open the think channel: the output starts outside every channel.
PLAIN_PROMPT = '<|open|>message role="assistant"<|sep|>'


def op(name: str, **attrs: str) -> str:
    return OPEN + name + "".join(f' {k}="{v}"' for k, v in attrs.items()) + SEP


def cl(name: str) -> str:
    return CLOSE + name + SEP


def arg(key: str, typ: str, value: str) -> str:
    return op("argument", key=key, type=typ) + value + cl("argument")


def call(name: str, index: int, *args: str) -> str:
    return op("call", tool=name, index=str(index)) + "".join(args) + cl("call")


def tools(*calls: str) -> str:
    return op("tools") + "".join(calls) + cl("tools")


SPEC = (
    op("think") + "use the calculator" + cl("think")
    + op("response") + "I will calculate." + cl("response")
    + tools(call("calc", 1, arg("x", "number", "42")))
    + END
)  # fmt: skip

SAMPLES: list[Sample] = [
    Sample("kimi_k3-spec", SPEC, K, K, calls=1),
    Sample(
        "kimi_k3-prefilled-think-several-calls",
        "Two lookups needed."
        + cl("think")
        + op("response")
        + "Checking both cities."
        + cl("response")
        + tools(
            "\n",
            call("get_weather", 1, arg("city", "string", "Paris"), arg("days", "number", "3")),
            "\n",
            call(
                "get_weather",
                2,
                arg("city", "string", "Zürich ☀"),
                arg("metric", "boolean", "true"),
            ),
            "\n",
        )
        + END,
        K,
        K,
        prompt='<|open|>message role="assistant"<|sep|><|open|>think<|sep|>',
        calls=2,
    ),
    Sample(
        "kimi_k3-text-around-calls",
        "Plain text first. "
        + tools(call("a", 1, arg("q", "string", "x")))
        + " then more "
        + tools(call("b", 2))
        + " and the end."
        + END,
        K,
        prompt=PLAIN_PROMPT,
        calls=2,
    ),
    Sample(
        "kimi_k3-tool-marker-ends-unclosed-think",
        op("think")
        + "I should look it up"
        + tools(call("search", 1, arg("q", "string", "k3")))
        + END,
        K,
        K,
        calls=1,
    ),
    Sample(
        "kimi_k3-nested-json-and-json-channel",
        tools(
            call(
                "deploy",
                1,
                arg("cfg", "object", '{"services": [{"name": "api", "replicas": 3}], "on": true}'),
                arg("ratio", "number", "-0.5e-3"),
                arg("tags", "array", '["a", "b"]'),
                arg("none", "null", "null"),
            ),
            call("raw", 2, op("json", type="object") + '{"k": [1, {"deep": "ü"}]}' + cl("json")),
        )
        + END,
        K,
        K,
        calls=2,
    ),
    Sample(
        "kimi_k3-spaced-markers-escaped-attributes",
        "<|open|> think <|sep|>r<|close|> think <|sep|> <|open|> response <|sep|>ok"
        "<|close|> response <|sep|> <|open|> tools <|sep|>"
        ' <|open|> call tool="a&amp;b" index="1" <|sep|>'
        ' <|open|> argument key="say &quot;hi&quot;" <|sep|>x<|close|> argument <|sep|>'
        " <|close|> call <|sep|> <|close|> tools <|sep|> <|close|> message <|sep|>",
        K,
        K,
        calls=1,
    ),
    Sample(
        "kimi_k3-empty-arguments-and-text-after-end",
        tools(call("get_time", 1)) + END + "this is not part of the answer",
        K,
        K,
        calls=1,
    ),
    Sample(
        "kimi_k3-unterminated-call",
        op("response")
        + "Working."
        + cl("response")
        + op("tools")
        + op("call", tool="f", index="1")
        + op("argument", key="q", type="string")
        + "abc",
        K,
        K,
    ),
    Sample(
        "kimi_k3-call-without-tool-name",
        tools(op("call", index="1") + arg("x", "string", "1") + cl("call"), call("g", 2)) + END,
        K,
        K,
        calls=1,
    ),
    Sample(
        "kimi_k3-thinking-off",
        op("think") + "hm" + cl("think") + "Answer 42" + END,
        K,
        K,
        thinking=False,
    ),
    Sample("kimi_k3-cut-marker", "answer <|open|> too", K, K, prompt=PLAIN_PROMPT),
]

OPENERS: list[Opener] = [
    Opener(K, None, op("tools"), thinking=False),
    Opener(K, K, op("call", tool="f", index="1"), prompt=PLAIN_PROMPT),
    Opener(K, K, op("think"), prompt=PLAIN_PROMPT, is_call=False),
]

LOSSLESS: list[Lossless] = [
    Lossless(
        K,
        K,
        (
            CallPiece(
                tools(
                    call("get_weather", 1, arg("city", "string", "Zürich"), arg("n", "number", "2"))
                ),
                "get_weather",
                {"city": "Zürich", "n": 2},
            ),
            CallPiece(call("noop", 1), "noop", {}),
            CallPiece(
                tools(call("j", 1, op("json") + '{"a": [1, null], "t": "<|close|>"}' + cl("json"))),
                "j",
                {"a": [1, None], "t": "<|close|>"},
            ),
        ),
        reasoning=(op("think"), cl("think")),
        quoted=(op("tools"), op("call", tool="f", index="1"), op("think")),
        prompt=PLAIN_PROMPT,
        # calls without a tool name (V1 lost their text)
        broken=(
            op("call") + "hello" + cl("call"),
            tools(op("call") + "hello world" + cl("call")),
            op("call", tool="", index="1") + "hi" + cl("call"),
        ),
        markup=r"<\|(?:open|close)\|>[^<]*<\|sep\|>|<\|end_of_msg\|>",
    ),
]
