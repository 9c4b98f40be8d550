"""Each family through each engine's sidecar with the real `openai` client.

For every (engine, family configuration): the fake engine replays the family's scripted
output in token-sized chunks; sync and async clients, streamed and not, must get the same
reasoning, content and tool calls as `parsers.parse` on that output (with the prompt the
sidecar rendered), the `x-parser-route` header must be the expected route, and the streamed
argument fragments must join to the same arguments.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from sidecar_harness import MODEL, Deployment, deploy

import parsers
from parsers.errors import ConfigError
from parsers.families import reasoning_grammar, tool_grammar
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS
from sidecar.fake_engine import Script

pytestmark = pytest.mark.parser_mode_independent(
    reason="each case sets DYN_PARSER_VERSION explicitly and asserts its route"
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["location"],
        },
    },
}
CALC = {
    "type": "function",
    "function": {
        "name": "calc",
        "parameters": {"type": "object", "properties": {"x": {"type": "number"}}},
    },
}
DSML = "｜DSML｜"


@dataclass(frozen=True)
class Case:
    id: str
    tool_parser: str | None
    reasoning_parser: str | None
    output: str
    route: str  # expected x-parser-route (parser-selection.md section 3, or the version set)
    version: str | None = None  # DYN_PARSER_VERSION
    tools: tuple[dict[str, Any], ...] = (WEATHER,)
    extra: dict[str, Any] = field(default_factory=dict)  # request fields (thinking, ...)
    calls: tuple[str, ...] = ("get_weather",)  # tool names the output must yield
    reasoning: str | None = None  # the reasoning the output holds (prefill-aware)


CASES = [
    Case(
        "qwen3-hermes-v1",
        "hermes",
        "qwen3",
        '<think>Need weather.</think>Checking.<tool_call>\n{"name": "get_weather", '
        '"arguments": {"location": "Paris", "days": 3}}\n</tool_call>',
        "legacy_jail",
        reasoning="Need weather.",
    ),
    Case(
        "qwen3-hermes-v2",
        "hermes",
        "qwen3",
        '<think>Need weather.</think>The literal "<tool_call>" marker is explained.'
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>',
        "parser_v2",
        version="2",
        reasoning="Need weather.",
    ),
    Case(
        "qwen3-coder",
        "qwen3_coder",
        "qwen3",
        "Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=location>\nSan "
        "Francisco\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
        "parser_v2",
    ),
    Case(
        "glm",
        "glm47",
        "glm45",
        "<think>The user wants weather.</think>I'll check the weather for you. "
        "<tool_call>get_weather"
        "<arg_key>location</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key>"
        "<arg_value>4</arg_value></tool_call>",
        "legacy_jail",
        reasoning="The user wants weather.",
    ),
    Case(
        "deepseek-v4",
        "deepseek_v4",
        "deepseek_v4",
        f'Look it up.</think>\n\n<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
        f'<{DSML}parameter name="location" string="true">Paris</{DSML}parameter>\n'
        f'<{DSML}parameter name="days" string="false">5</{DSML}parameter>\n'
        f"</{DSML}invoke>\n</{DSML}tool_calls>",
        "legacy_jail",
        reasoning="Look it up.",
    ),
    Case(
        "deepseek-v41",
        "deepseek_v41",
        "deepseek_v41",
        f'Look it up.</think>Sure.\n\n<{DSML} calls>\n<{DSML} invoke name="get_weather">\n'
        f'<{DSML} parameter name="location" string="true">Paris</{DSML} parameter>\n'
        f"</{DSML} invoke>\n</{DSML} calls>",
        "parser_v2",
        reasoning="Look it up.",
    ),
    Case(
        "kimi-k2",
        "kimi_k2",
        "kimi_k25",
        "<think>Let me check.</think><|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"location": "Paris"}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        "legacy_jail",
        reasoning="Let me check.",
    ),
    Case(
        "kimi-k2-v2",
        "kimi_k2",
        "kimi_k25",
        "Let me check.</think>On it.<|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"location": "Paris", "days": 1}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        "parser_v2",
        version="2",
        reasoning="Let me check.",
    ),
    Case(
        "kimi-k3",
        "kimi_k3",
        "kimi_k3",
        "use the calculator<|close|>think<|sep|><|open|>response<|sep|>I will calculate."
        '<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|>'
        '<|open|>argument key="x" type="number"<|sep|>42<|close|>argument<|sep|><|close|>call'
        "<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
        "legacy_jail",
        tools=(CALC,),
        calls=("calc",),
        reasoning="use the calculator",
    ),
    Case(
        "gemma4",
        "gemma4",
        "gemma4",
        '<|channel>thought\nstep<channel|><|tool_call>call:get_weather{location:<|"|>Tokyo'
        '<|"|>,days:42}<tool_call|>',
        "legacy_jail",
        extra={"thinking": True},
        reasoning="step",
    ),
    Case(
        "muse",
        "muse",
        "muse",
        " to=self<|message|>Look it up.<|eom|><|start|>assistant to=get_weather<|message|>"
        '<atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter name='
        '"location">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>'
        "<|start|>assistant to=user<|message|>It's 18C.<|eot|>",
        "parser_v2",
        reasoning="Look it up.",
    ),
    Case(
        "qwen3-coder-named",
        "qwen3_coder",
        "qwen3",
        '{"location": "Rome", "days": 2}',
        "legacy_jail",  # forced choices stay V1 under the family defaults
        extra={"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    ),
    Case(
        "kimi-k2-v2-named",
        "kimi_k2",
        "kimi_k25",
        '{"location": "Rome"}',
        "parser_v2",
        version="2",
        extra={
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "thinking": False,
        },
    ),
    Case(
        "qwen3-hermes-forced-v1",
        "hermes",
        "qwen3",
        '[{"name": "get_weather", "parameters": {"location": "Oslo"}}]',
        "legacy_jail",
        version="1",
        extra={"tool_choice": "required", "thinking": False},
    ),
]


def _grammars_available(case: Case) -> bool:
    """The parsers package is written concurrently: skip families whose grammar is missing."""
    try:
        if case.tool_parser:
            tool_grammar(TOOL_PARSERS[case.tool_parser].canonical)
        if case.reasoning_parser:
            reasoning_grammar(REASONING_PARSERS[case.reasoning_parser].canonical)
    except ConfigError:
        return False
    return True


def _sidecar(d: Deployment, case: Case) -> str:
    env = {"DYN_PARSER_VERSION": case.version} if case.version else {}
    d.engine.scripts[case.id] = Script(case.output, seed=sum(map(ord, case.id)))
    return d.sidecar(case.tool_parser, case.reasoning_parser, env)


def _messages(case: Case) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"[[script:{case.id}]] What is the weather?"}]


def _expected(d: Deployment, case: Case) -> parsers.ParsedMessage:
    """`parsers.parse` on the scripted output, with the prompt the sidecar sent the engine."""
    sent = d.engine.requests[-1]
    prompt = sent["text"] if d.kind == "sglang" else sent["prompt"]
    assert f"[[script:{case.id}]]" in prompt
    return parsers.parse(
        case.output,
        tool_parser=case.tool_parser,
        reasoning_parser=case.reasoning_parser,
        tools=list(case.tools),
        tool_choice=case.extra.get("tool_choice"),
        generation=int(case.version) if case.version else None,
        thinking=case.extra.get("thinking"),
        prompt=prompt,
    )


@dataclass
class Received:
    route: str
    content: str | None
    reasoning: str | None
    calls: list[tuple[str, str, str]]  # (id, name, arguments)
    finish_reason: str | None
    fragments: dict[int, list[str]] = field(default_factory=dict)


def _from_message(route: str, completion: Any) -> Received:
    choice = completion.choices[0]
    message = choice.message
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    reasoning = getattr(message, "reasoning_content", None)
    return Received(route, message.content, reasoning, calls, choice.finish_reason)


class _StreamCollector:
    def __init__(self, route: str) -> None:
        self.route = route
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.heads: dict[int, tuple[str, str]] = {}
        self.fragments: dict[int, list[str]] = {}
        self.finish: str | None = None

    def add(self, chunk: Any) -> None:
        if not chunk.choices:
            return
        choice = chunk.choices[0]
        delta = choice.delta
        self.content.append(delta.content or "")
        self.reasoning.append(getattr(delta, "reasoning_content", None) or "")
        for call in delta.tool_calls or []:
            if call.index not in self.heads:
                # the first delta of a call carries its id, type and name
                assert call.id and call.type == "function" and call.function.name
                self.heads[call.index] = (call.id, call.function.name)
            else:
                assert call.id is None and (call.function is None or not call.function.name)
            if call.function is not None and call.function.arguments:
                self.fragments.setdefault(call.index, []).append(call.function.arguments)
        self.finish = choice.finish_reason or self.finish

    def received(self) -> Received:
        calls = [
            (cid, name, "".join(self.fragments.get(i, [])))
            for i, (cid, name) in sorted(self.heads.items())
        ]
        return Received(
            self.route,
            "".join(self.content) or None,
            "".join(self.reasoning) or None,
            calls,
            self.finish,
            self.fragments,
        )


def _request(case: Case, stream: bool) -> dict[str, Any]:
    extra = dict(case.extra)
    tool_choice = extra.pop("tool_choice", openai.NOT_GIVEN)
    return {
        "model": MODEL,
        "messages": _messages(case),
        "tools": list(case.tools),
        "tool_choice": tool_choice,
        "stream": stream,
        "extra_body": extra or None,
    }


@functools.cache
def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=30)


def _sync(url: str, case: Case, stream: bool) -> Received:
    client = _client(url)
    raw = client.chat.completions.with_raw_response.create(**_request(case, stream))
    route = raw.headers["x-parser-route"]
    if not stream:
        return _from_message(route, raw.parse())
    collector = _StreamCollector(route)
    for chunk in raw.parse():
        collector.add(chunk)
    return collector.received()


async def _async(url: str, case: Case, stream: bool) -> Received:
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=30)
    async with client:
        raw = await client.chat.completions.with_raw_response.create(**_request(case, stream))
        route = raw.headers["x-parser-route"]
        if not stream:
            return _from_message(route, raw.parse())
        collector = _StreamCollector(route)
        async for chunk in raw.parse():
            collector.add(chunk)
        return collector.received()


def _check(got: Received, expected: parsers.ParsedMessage, case: Case) -> None:
    assert got.route == case.route == expected.route
    assert (got.content or None) == (expected.content or None)
    assert (got.reasoning or None) == (expected.reasoning_content or None)
    assert got.reasoning == case.reasoning
    assert [name for _, name, _ in got.calls] == [c.name for c in expected.tool_calls]
    assert [name for _, name, _ in got.calls] == list(case.calls)
    for (_, _, arguments), call in zip(got.calls, expected.tool_calls, strict=True):
        assert json.loads(arguments) == json.loads(call.arguments)
        assert arguments == call.arguments
    native = [c.id for c in expected.tool_calls if not c.id.startswith("call-")]
    if native:  # native ids (Kimi) are kept verbatim; generated ids are unique per response
        assert [cid for cid, _, _ in got.calls] == [c.id for c in expected.tool_calls]
    assert len({cid for cid, _, _ in got.calls}) == len(got.calls)
    assert got.finish_reason == expected.finish_reason == "tool_calls"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_family_through_sidecar(deployment: Deployment, case: Case, mode: str) -> None:
    if not _grammars_available(case):
        pytest.skip(f"parsers has no grammar for {case.tool_parser}/{case.reasoning_parser} yet")
    url = _sidecar(deployment, case)
    for stream in (False, True):
        got = _sync(url, case, stream) if mode == "sync" else asyncio.run(_async(url, case, stream))
        _check(got, _expected(deployment, case), case)
        if stream and got.route == "legacy_jail":
            # V1 emits each call whole: one arguments fragment per call
            assert all(len(parts) == 1 for parts in got.fragments.values())
        if stream and got.route == "parser_v2":
            # V2 streams arguments as they arrive; the sidecar forwards them unbuffered
            assert any(len(parts) > 1 for parts in got.fragments.values())


@pytest.fixture(scope="module")
def sglang_incremental() -> Iterator[Deployment]:
    """SGLang run with `--incremental-streaming-output`: each event's `text` is a delta."""
    yield from deploy("sglang", incremental=True)


@pytest.mark.parametrize("case", CASES[:4], ids=[c.id for c in CASES[:4]])
def test_sglang_incremental_output(sglang_incremental: Deployment, case: Case) -> None:
    if not _grammars_available(case):
        pytest.skip(f"parsers has no grammar for {case.tool_parser}/{case.reasoning_parser} yet")
    url = _sidecar(sglang_incremental, case)
    got = _sync(url, case, stream=True)
    _check(got, _expected(sglang_incremental, case), case)
