"""Pure pieces of the sidecar: SSE decoding, engine payload decoding, guided schemas,
request validation, OpenAI chunk shapes, chat templates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from parsers.plan import ParsePlan
from parsers.settings import load_settings
from parsers.types import Delta, ParsedMessage, ToolCall, ToolCallDelta
from sidecar.chat import Accumulator, ChunkFactory, chunks_for, completion
from sidecar.engine_client import EngineStream
from sidecar.engines.base import CompletionsDecoder, EngineRequest, Usage
from sidecar.engines.sglang import SGLangAdapter, SGLangDecoder
from sidecar.engines.trtllm import TRTLLMAdapter
from sidecar.engines.vllm import VLLMAdapter
from sidecar.errors import APIError, EngineError
from sidecar.fake_engine import chunk_text
from sidecar.output_schema import guided_schema
from sidecar.prompt import ChatTemplate
from sidecar.request import Sampling, decode_body, parse_chat_request
from sidecar.sse import SSEDecoder

pytestmark = pytest.mark.parser_mode_independent(
    reason="pure sidecar pieces; parser settings are passed explicitly"
)

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time"}},
)


def test_sse_decoder_joins_multiline_data_and_skips_comments() -> None:
    decoder = SSEDecoder()
    lines = [": keep-alive", 'data: {"a":', "data: 1}", "", "event: x", "data:[DONE]", ""]
    events = [e for line in lines if (e := decoder.line(line)) is not None]
    assert events == ['{"a":\n1}', "[DONE]"]
    assert decoder.flush() is None


def test_sse_decoder_flushes_an_unterminated_event() -> None:
    decoder = SSEDecoder()
    assert decoder.line("data: tail") is None
    assert decoder.flush() == "tail"


def _sglang(text: str, finish: Any = None) -> dict[str, Any]:
    meta = {"finish_reason": finish, "prompt_tokens": 3, "completion_tokens": 2}
    return {"text": text, "meta_info": meta}


@pytest.mark.parametrize("mode", ["auto", "cumulative"])
def test_sglang_cumulative_text_becomes_deltas(mode: Any) -> None:
    decoder = SGLangDecoder(mode)
    texts = ["Hel", "Hello", "Hello wor", "Hello world", "Hello world"]
    deltas = [decoder.decode(_sglang(t)).text for t in texts]
    assert deltas == ["Hel", "lo", " wor", "ld", ""]
    last = decoder.decode(_sglang("Hello world!", {"type": "stop", "matched": 2}))
    assert (last.text, last.finish_reason, last.stop_reason) == ("!", "stop", 2)
    assert last.usage is not None and last.usage.completion_tokens == 2


@pytest.mark.parametrize("mode", ["auto", "incremental"])
def test_sglang_incremental_text_is_kept(mode: Any) -> None:
    decoder = SGLangDecoder(mode)
    texts = ["Hel", "lo", " wor", "ld"]
    assert [decoder.decode(_sglang(t)).text for t in texts] == texts


def test_sglang_finish_reason_object_and_abort() -> None:
    decoder = SGLangDecoder("auto")
    event = decoder.decode(_sglang("x", {"type": "length", "length": 5}))
    assert event.finish_reason == "length"
    with pytest.raises(EngineError) as info:
        SGLangDecoder("auto").decode(_sglang("x", {"type": "abort", "message": "oom"}))
    assert info.value.code == "engine_aborted"
    with pytest.raises(EngineError, match="malformed"):
        SGLangDecoder("auto").decode({"text": "no meta"})
    with pytest.raises(EngineError, match="does not extend"):
        cumulative = SGLangDecoder("cumulative")
        cumulative.decode(_sglang("abc"))
        cumulative.decode(_sglang("xyz"))


def test_completions_decoder_reads_text_finish_stop_reason_and_usage() -> None:
    decoder = CompletionsDecoder()
    choice = {"index": 0, "text": "hi", "finish_reason": "stop", "stop_reason": "###"}
    event = decoder.decode({"choices": [choice]})
    assert (event.text, event.finish_reason, event.stop_reason) == ("hi", "stop", "###")
    usage = decoder.decode({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 7}})
    assert usage.usage is not None and usage.usage.as_dict()["total_tokens"] == 11
    with pytest.raises(EngineError, match="malformed"):
        decoder.decode({"choices": [{"index": 0}]})
    with pytest.raises(EngineError, match="boom"):
        decoder.decode({"error": {"message": "boom"}})


def _request(**body: Any) -> EngineRequest:
    sampling = Sampling(max_tokens=16, temperature=0.5, top_k=4, seed=7, stop=("END",))
    return EngineRequest("m", "PROMPT", sampling, stream=True, guided_json={"type": "object"})


def test_vllm_body_passes_sampling_and_guided_json_in_its_own_field() -> None:
    body = VLLMAdapter().build_body(_request())
    assert body["prompt"] == "PROMPT" and body["max_tokens"] == 16 and body["stop"] == ["END"]
    assert body["temperature"] == 0.5 and body["top_k"] == 4 and body["seed"] == 7
    assert body["structured_outputs"] == {"json": {"type": "object"}}
    assert body["stream_options"] == {"include_usage": True}
    legacy = VLLMAdapter(legacy_guided_json=True).build_body(_request())
    assert legacy["guided_json"] == {"type": "object"} and "structured_outputs" not in legacy


def test_sglang_body_uses_sampling_params_and_json_schema_string() -> None:
    body = SGLangAdapter().build_body(_request())
    params = body["sampling_params"]
    assert body["text"] == "PROMPT" and body["stream"] is True
    assert params["max_new_tokens"] == 16 and params["sampling_seed"] == 7
    assert params["stop"] == ["END"] and json.loads(params["json_schema"]) == {"type": "object"}


def test_trtllm_body_uses_response_format_json_schema() -> None:
    body = TRTLLMAdapter().build_body(_request())
    assert body["response_format"] == {"type": "json", "schema": {"type": "object"}}
    non_stream = TRTLLMAdapter().build_body(
        EngineRequest("m", "p", Sampling(), stream=False, guided_json=None)
    )
    assert "stream_options" not in non_stream and "response_format" not in non_stream


def _plan(mode: Any, named: str | None = None) -> ParsePlan:
    return ParsePlan(
        route="legacy_jail",
        family="qwen3",
        tool_parser="hermes",
        reasoning_parser=None,
        tool_mode=mode,
        named_tool=named,
        tools=TOOLS,
    )


def test_guided_schema_for_required_lists_each_tool() -> None:
    schema = guided_schema(_plan("required"), None)
    assert schema is not None and schema["type"] == "array" and schema["minItems"] == 1
    branches = schema["items"]["anyOf"]
    assert [b["properties"]["name"]["enum"] for b in branches] == [["get_weather"], ["get_time"]]
    assert branches[0]["properties"]["parameters"]["properties"] == {"location": {"type": "string"}}
    assert branches[1]["properties"]["parameters"] == {"type": "object"}


def test_guided_schema_for_named_is_the_bare_arguments_object() -> None:
    schema = guided_schema(_plan("named", "get_weather"), None)
    assert schema == TOOLS[0]["function"]["parameters"]
    assert guided_schema(_plan("auto"), None) is None
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}}
    request = parse_chat_request(
        {"messages": [{"role": "user"}], "response_format": fmt}, load_settings({})
    )
    assert guided_schema(_plan("auto"), request.response_format) == {"type": "array"}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": 3, "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n"),
        ({"messages": [{"role": "user", "content": "x"}], "temperature": 5}, "temperature"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "x"}], "stop": [1]}, "stop"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": {}}, "tools"),
    ],
)
def test_request_validation_names_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(APIError) as info:
        parse_chat_request(body, load_settings({}))
    assert info.value.status == 400 and info.value.param == param
    assert param.split("[")[0] in info.value.message


def test_the_request_carries_its_typed_facts() -> None:
    settings = load_settings({}, tool_parser="deepseek_v41", reasoning_parser="deepseek_v41")
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "tools": list(TOOLS),
        "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        "thinking": {"type": "disabled"},
        "reasoning_effort": 40,
        "response_format": {"type": "json_object"},
    }
    facts = parse_chat_request(body, settings).facts
    assert (facts.choice.mode, facts.choice.name) == ("named", "get_time")
    assert (facts.thinking_field, facts.asked, facts.thinking) == (False, False, False)
    assert facts.effort == 40 and facts.json_answer and not facts.structural_tag
    assert facts.route.kind == "parser_v2"
    # the tool choice is checked against the declared tools, in the same step
    with pytest.raises(APIError) as info:
        parse_chat_request({**body, "tools": list(TOOLS[:1])}, settings)
    assert info.value.status == 400 and info.value.param == "tool_choice"


def test_request_body_must_be_a_json_object() -> None:
    for raw in (b"{", b"[1]", b"\xff"):
        with pytest.raises(APIError) as info:
            decode_body(raw)
        assert info.value.status == 400


def test_request_sampling_is_collected() -> None:
    req = parse_chat_request(
        {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_completion_tokens": 9,
            "max_tokens": 3,
            "stop": "X",
            "top_p": 0.5,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        load_settings({}),
    )
    assert req.sampling.max_tokens == 9 and req.sampling.stop == ("X",)
    assert req.sampling.top_p == 0.5 and req.stream and req.include_usage


def test_chunks_follow_the_openai_tool_call_shape() -> None:
    factory = ChunkFactory("chatcmpl-1", 0, "m", include_usage=True)
    acc = Accumulator()
    deltas = [
        Delta(reasoning_content="think"),
        Delta(content="Sure."),
        Delta(tool_calls=[ToolCallDelta(0, id="call-1", name="get_weather")]),
        Delta(tool_calls=[ToolCallDelta(0, arguments='{"location": "')]),
        Delta(tool_calls=[ToolCallDelta(0, arguments='Paris"}')]),
    ]
    chunks = chunks_for(factory, acc, deltas)
    bodies = [c["choices"][0]["delta"] for c in chunks]
    assert bodies[0] == {"reasoning_content": "think"} and bodies[1] == {"content": "Sure."}
    assert bodies[2]["tool_calls"] == [
        {
            "index": 0,
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
    ]
    assert bodies[3]["tool_calls"] == [{"index": 0, "function": {"arguments": '{"location": "'}}]
    assert all(c["usage"] is None for c in chunks)
    assert acc.add(Delta()) is None  # an empty delta sends nothing


def test_completion_body_from_a_parsed_message() -> None:
    message = ParsedMessage(
        content=None,
        reasoning_content="think",
        tool_calls=[ToolCall("call-1", "get_weather", '{"location": "Paris"}')],
        finish_reason="tool_calls",
        route="parser_v2",
    )
    body = completion("chatcmpl-1", 5, "m", message, Usage(3, 4))
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and body["object"] == "chat.completion"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
        }
    ]
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_chunk_text_keeps_special_tokens_whole_and_loses_nothing() -> None:
    text = "<think>a b</think>x<|tool_calls_section_begin|>yz<｜DSML｜tool_calls>!"
    for seed in range(5):
        pieces = chunk_text(text, seed)
        assert "".join(pieces) == text
        assert "<|tool_calls_section_begin|>" in pieces and "<think>" in pieces


# family settings -> what the built-in template's generation prompt ends with
PREFILLS = [
    ("glm47", "glm45", True, "<|assistant|><think>"),  # GLM-4.7 prefills the opener
    ("glm47", "glm45", False, "<|assistant|></think>"),
    ("deepseek_v4", "deepseek_v4", True, "<think>"),
    ("deepseek_v41", "deepseek_v41", True, "<think>"),
    ("deepseek_v41", "deepseek_v41", False, "</think>"),
    ("kimi_k3", "kimi_k3", True, "<|open|>think<|sep|>"),
    ("hermes", "qwen3", False, "</think>"),
    ("kimi_k2", "kimi_k25", False, "<|im_assistant|>assistant<|im_middle|>"),  # no switch
    ("kimi_k3", "kimi_k3", False, "<|open|>response<|sep|>"),
    ("muse", "muse", True, "<|start|>assistant"),
    ("gemma4", "gemma4", True, "<|turn>model"),
    ("qwen3_coder", "qwen3", True, "<|im_start|>assistant"),
    (None, None, True, "<|im_start|>assistant"),
]


@pytest.mark.parametrize(("tool", "reasoning", "thinking", "tail"), PREFILLS)
def test_builtin_templates_write_the_generation_prompt(
    tool: str | None, reasoning: str | None, thinking: bool, tail: str
) -> None:
    settings = load_settings({}, tool_parser=tool, reasoning_parser=reasoning)
    template = ChatTemplate.builtin(settings.family, settings.tool_parser)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    prompt = template.render(messages, list(TOOLS), thinking=thinking)
    assert prompt.rstrip().endswith(tail)
    assert "Weather in Paris?" in prompt
    assert "get_weather" in prompt  # the tool declarations are written


def test_template_errors_are_client_errors() -> None:
    template = ChatTemplate("{{ raise_exception('only user turns') }}", "inline", None)
    with pytest.raises(APIError) as info:
        template.render([{"role": "user", "content": "x"}], [], thinking=False)
    assert info.value.status == 400 and "only user turns" in info.value.message


def test_templates_are_sandboxed() -> None:
    template = ChatTemplate("{{ messages.__class__.__mro__ }}", "inline", None)
    with pytest.raises(APIError):
        template.render([{"role": "user", "content": "x"}], [], thinking=False)


class _Chunks:
    """A response body arriving in `chunks` (the `engine_client.Body` interface)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        pass


def _engine_batches(chunks: list[bytes]) -> tuple[list[list[str]], EngineError | None]:
    """Run EngineStream.batches over a response whose body arrives in `chunks`."""

    async def run() -> tuple[list[list[str]], EngineError | None]:
        stream = EngineStream(_Chunks(chunks), VLLMAdapter(), 1.0)
        got: list[list[str]] = []
        try:
            async for batch in stream.batches():
                got.append([e.text for e in batch])
        except EngineError as exc:
            return got, exc
        return got, None

    return asyncio.run(run())


def _event(text: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "text": text, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}, ensure_ascii=False).encode() + b"\r\n\r\n"


def test_engine_stream_batches_by_network_read() -> None:
    body = _event("é€") + _event("b") + _event("c", "stop") + b"data: [DONE]\n\n"
    split = body.index("€".encode()) + 1  # inside a multi-byte character
    second = len(_event("é€")) + 3  # inside the second event
    batches, error = _engine_batches([body[:split], body[split:second], body[second:]])
    assert error is None
    assert batches == [["é€"], ["b", "c"]]  # what arrived together is relayed together


def test_engine_stream_delivers_good_events_before_an_error() -> None:
    batches, error = _engine_batches([_event("a") + b"data: {oops\n\n"])
    assert batches == [["a"]] and error is not None and error.code == "engine_protocol_error"
    batches, error = _engine_batches([_event("a"), _event("b")])  # no finish, no [DONE]
    assert batches == [["a"], ["b"]] and error is not None
    assert error.code == "engine_stream_closed"
    batches, error = _engine_batches([_event("a", "stop")[:-2]])  # last event unterminated
    assert batches == [["a"]] and error is None
