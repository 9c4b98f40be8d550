"""The sidecar over real HTTP: endpoints, request-policy 400s, engine fields, faults.

Every engine kind runs as a fake engine on loopback (module fixture `deployment`) with
sidecars served by uvicorn in front; clients are the real `openai` package and httpx.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import httpx
import openai
import pytest
from sidecar_harness import MODEL, Deployment, adapter_for

from parsers.settings import load_settings
from sidecar.app import build_app
from sidecar.config import SidecarConfig, Timeouts
from sidecar.fake_engine import Script
from sidecar.prompt import ChatTemplate
from sidecar.structural import ForcedChoice

pytestmark = pytest.mark.parser_mode_independent(
    reason="each sidecar is configured with an explicit DYN_PARSER_VERSION"
)

USER = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=20)


def script(d: Deployment, name: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Register a script; returns messages that select it."""
    d.engine.scripts[name] = Script(**kwargs)
    return [{"role": "user", "content": f"[[script:{name}]] go"}]


def test_models_live_and_metrics(deployment: Deployment) -> None:
    url = deployment.sidecar()
    models = client(url).models.list()
    assert [m.id for m in models.data] == [MODEL]
    assert httpx.get(f"{url}/live").json() == {"status": "alive"}
    client(url).chat.completions.create(model=MODEL, messages=USER)
    metrics = httpx.get(f"{url}/metrics").text
    route = "pass_through"
    assert f'sidecar_parser_route_requests_total{{engine="{deployment.kind}",route="{route}"}}' in (
        metrics
    )
    assert f'sidecar_requests_total{{engine="{deployment.kind}",status="200"}}' in metrics
    assert "sidecar_request_duration_seconds_bucket" in metrics
    for _ in client(url).chat.completions.create(model=MODEL, messages=USER, stream=True):
        pass
    metrics = httpx.get(f"{url}/metrics").text
    ttft = [
        line
        for line in metrics.splitlines()
        if line.startswith("sidecar_time_to_first_token_seconds_count")
    ]
    assert ttft and float(ttft[0].split()[-1]) >= 1


def test_responses_carry_a_date_but_no_server_header(deployment: Deployment) -> None:
    """`server_header=False` (docs/sidecar.md, Performance): the implementation is not
    announced; the `date` header an origin server with a clock sends stays."""
    response = httpx.get(deployment.sidecar() + "/live", timeout=10)
    assert response.status_code == 200
    assert "date" in response.headers
    assert "server" not in response.headers, response.headers


def test_health_follows_the_engine(deployment: Deployment) -> None:
    url = deployment.sidecar()
    assert httpx.get(f"{url}/health").status_code == 200
    deployment.engine.healthy = False
    try:
        response = httpx.get(f"{url}/health")
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "engine_unavailable"
    finally:
        deployment.engine.healthy = True
    assert httpx.get(f"{url}/health").status_code == 200


def test_unknown_path_uses_the_error_envelope(deployment: Deployment) -> None:
    response = httpx.get(f"{deployment.sidecar()}/v1/nope")
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    # the chat route's plain ASGI handler takes POST only; other methods get Starlette's 405
    response = httpx.get(f"{deployment.sidecar()}/v1/chat/completions")
    assert response.status_code == 405
    assert response.json()["error"]["message"] == "Method Not Allowed"


def test_sampling_parameters_reach_the_engine(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "sampling", text="one two three four five six seven", seed=1)
    response = client(url).chat.completions.create(
        model=MODEL, messages=messages, temperature=0.3, top_p=0.9, seed=11, max_tokens=3,
        stop=["never-there"],
    )  # fmt: skip
    sent = deployment.engine.requests[-1]
    params = sent["sampling_params"] if deployment.kind == "sglang" else sent
    assert params["temperature"] == 0.3 and params["top_p"] == 0.9
    assert params["stop"] == ["never-there"]
    assert params["max_new_tokens" if deployment.kind == "sglang" else "max_tokens"] == 3
    assert params["sampling_seed" if deployment.kind == "sglang" else "seed"] == 11
    # the fake stops after max_tokens chunks: the finish reason comes from the engine
    assert response.choices[0].finish_reason == "length"
    assert response.usage is not None and response.usage.completion_tokens == 3


def test_stop_strings_end_generation(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "stop", text="alpha beta ### gamma")
    for stream in (False, True):
        if stream:
            chunks = client(url).chat.completions.create(
                model=MODEL, messages=messages, stop="###", stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            result = client(url).chat.completions.create(model=MODEL, messages=messages, stop="###")
            text = result.choices[0].message.content or ""
            assert result.choices[0].finish_reason == "stop"
        assert text == "alpha beta "
    raw = httpx.post(
        f"{url}/v1/chat/completions", json={"messages": messages, "stop": ["###"]}
    ).json()
    assert raw["choices"][0]["stop_reason"] == "###"  # the engine's stop string, passed on


def test_stream_usage_and_done(deployment: Deployment) -> None:
    url = deployment.sidecar()
    body = {"model": MODEL, "messages": USER, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=20) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-parser-route"] == "pass_through"
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert events[-1]["choices"] == [] and events[-1]["usage"]["total_tokens"] > 0
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert all(e["object"] == "chat.completion.chunk" for e in events)
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == deployment.engine.default.text


# -- request-policy errors are 400s through HTTP ------------------------------------------

POLICY_ERRORS = [
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice"),
    ({"tools": TOOLS, "tool_choice": {"type": "banana"}}, "tool_choice"),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"thinking": "maybe"}, "thinking"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"logprobs": True}, "logprobs"),
    ({"chat_template_kwargs": {"enable_thinking": "yes"}}, "chat_template_kwargs.enable_thinking"),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "param"), POLICY_ERRORS)
def test_request_policy_errors_are_400(
    deployment: Deployment, extra: dict[str, Any], param: str
) -> None:
    url = deployment.sidecar("hermes", "qwen3")
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            client(url).chat.completions.create(
                model=MODEL, messages=USER, stream=stream, extra_body=extra
            )
        assert info.value.status_code == 400
        body = info.value.body
        assert isinstance(body, dict) and body["param"] == param
        assert body["type"] == "invalid_request_error"


def test_forced_choice_without_tool_parser_under_v2_is_400(deployment: Deployment) -> None:
    url = deployment.sidecar(environ={"DYN_PARSER_VERSION": "2"})
    with pytest.raises(openai.BadRequestError) as info:
        client(url).chat.completions.create(
            model=MODEL, messages=USER, tools=TOOLS, tool_choice="required"
        )
    assert "DYN_PARSER_VERSION=2" in info.value.message


def test_malformed_bodies_are_400(deployment: Deployment) -> None:
    url = f"{deployment.sidecar()}/v1/chat/completions"
    for content in (b"{not json", b"[]", json.dumps({"messages": "hi"}).encode()):
        response = httpx.post(url, content=content, headers={"content-type": "application/json"})
        assert response.status_code == 400, content
        assert response.json()["error"]["type"] == "invalid_request_error"


def test_oversized_bodies_are_refused(deployment: Deployment) -> None:
    url = deployment.sidecar(max_body_bytes=4096)
    big = [{"role": "user", "content": "x" * 5000}]
    with pytest.raises(openai.APIStatusError) as info:
        client(url).chat.completions.create(model=MODEL, messages=big)
    assert info.value.status_code == 413
    assert "4096" in info.value.message

    # chunked upload without content-length is counted too
    def chunks() -> Any:
        yield json.dumps({"messages": big}).encode()

    response = httpx.post(f"{url}/v1/chat/completions", content=chunks())
    assert response.status_code == 413
    assert client(url).chat.completions.create(model=MODEL, messages=USER).choices


def test_forced_tool_choice_asks_for_guided_json_when_set(deployment: Deployment) -> None:
    url = deployment.sidecar("hermes", "qwen3", forced=ForcedChoice("guided-json"))
    messages = script(deployment, "guided", text='{"location": "Paris"}')
    named = {"type": "function", "function": {"name": "get_weather"}}
    reply = client(url).chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, tool_choice=named
    )
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
    sent = deployment.engine.requests[-1]
    schema = TOOLS[0]["function"]["parameters"]
    if deployment.kind == "vllm":
        assert sent["structured_outputs"] == {"json": schema}
    elif deployment.kind == "sglang":
        assert json.loads(sent["sampling_params"]["json_schema"]) == schema
    else:
        assert sent["response_format"] == {"type": "json", "schema": schema}


def test_forced_tool_choice_asks_for_the_family_tag(deployment: Deployment) -> None:
    """By default a forced choice is a structural tag in the family's call syntax, behind
    the reasoning the prompt asks for (Qwen3 thinking on, the opener not prefilled), in each
    engine's own request field."""
    url = deployment.sidecar("hermes", "qwen3")
    native = (
        "<think>ok</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    )
    messages = script(deployment, "tagged", text=native)
    named = {"type": "function", "function": {"name": "get_weather"}}
    reply = client(url).chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, tool_choice=named
    )
    call = reply.choices[0].message.tool_calls[0].function
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"location": "Paris"})
    schema = TOOLS[0]["function"]["parameters"]
    expected = {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {
                    "type": "tag",
                    "begin": "<think>",
                    "content": {"type": "any_text"},
                    "end": "</think>",
                },
                {"type": "const_string", "value": "\n\n"},
                {
                    "type": "tag",
                    "begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
                    "content": {
                        "type": "json_schema",
                        "json_schema": schema,
                        "max_whitespace_cnt": 4,  # xgrammar 0.2.8, the default
                    },
                    "end": "}\n</tool_call>",
                },
            ],
        },
    }
    sent = deployment.engine.requests[-1]
    if deployment.kind == "vllm":
        assert set(sent["structured_outputs"]) == {"structural_tag"}
        assert json.loads(sent["structured_outputs"]["structural_tag"]) == expected
        assert "response_format" not in sent
    elif deployment.kind == "sglang":
        assert json.loads(sent["sampling_params"]["structural_tag"]) == expected
        assert "json_schema" not in sent["sampling_params"]
    else:
        assert sent["response_format"] == {"type": "structural_tag", "format": expected["format"]}


# -- engine faults ----------------------------------------------------------------------


def _assert_still_serving(url: str) -> None:
    reply = client(url).chat.completions.create(model=MODEL, messages=USER)
    assert reply.choices[0].message.content


def test_engine_http_500(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "fail500", text="x", fail_status=500)
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as info:
            client(url).chat.completions.create(model=MODEL, messages=messages, stream=stream)
        assert info.value.status_code == 502
        assert isinstance(info.value.body, dict) and info.value.body["code"] == "engine_error"
    _assert_still_serving(url)


def test_engine_rejection_is_a_400_with_its_message(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "reject", text="x", fail_status=400)
    with pytest.raises(openai.BadRequestError) as info:
        client(url).chat.completions.create(model=MODEL, messages=messages)
    assert "scripted engine failure" in info.value.message


def test_engine_unreachable_is_503() -> None:
    from sidecar_harness import deploy

    gen = deploy("vllm")
    d = next(gen)
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead_port = s.getsockname()[1]
        d.engine_server.url = f"http://127.0.0.1:{dead_port}"  # nothing listens there
        url = d.sidecar()
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as info:
                client(url).chat.completions.create(model=MODEL, messages=USER, stream=stream)
            assert info.value.status_code == 503
            assert isinstance(info.value.body, dict)
            assert info.value.body["code"] == "engine_unavailable"
        assert httpx.get(f"{url}/health").status_code == 503
        assert httpx.get(f"{url}/live").status_code == 200
    finally:
        gen.close()


def _stream_error(url: str, messages: list[dict[str, Any]]) -> tuple[str, openai.APIError]:
    """Consume a stream that fails; returns the text received before the error and the error."""
    text = ""
    with pytest.raises(openai.APIError) as info:
        for chunk in client(url).chat.completions.create(
            model=MODEL, messages=messages, stream=True
        ):
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    return text, info.value


def test_engine_closes_mid_stream(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "close", text="abcdefghijklmnop", chunks=list("abcdefghij"),
                      close_after=4)  # fmt: skip
    text, error = _stream_error(url, messages)
    assert text == "abcd"  # what was generated arrived once, then the documented error
    assert isinstance(error.body, dict) and error.body["code"] == "engine_stream_closed"
    _assert_still_serving(url)


def test_engine_hangs_past_the_timeout(deployment: Deployment) -> None:
    url = deployment.sidecar(timeout=0.5)
    messages = script(deployment, "hang", text="x", chunks=list("abcdef"), hang_after=2)
    cancelled = deployment.engine.cancelled
    started = time.monotonic()
    text, error = _stream_error(url, messages)
    assert time.monotonic() - started < 10
    assert text == "ab"
    assert isinstance(error.body, dict) and error.body["code"] == "engine_timeout"
    with pytest.raises(openai.APIStatusError) as info:
        client(url).chat.completions.create(model=MODEL, messages=messages)
    assert info.value.status_code == 504
    _wait_for(lambda: deployment.engine.cancelled >= cancelled + 1)
    _assert_still_serving(url)


def test_malformed_engine_sse(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "garbage", text="x", chunks=list("abcdef"), malformed_after=3)
    text, error = _stream_error(url, messages)
    assert text == "abc"
    assert isinstance(error.body, dict) and error.body["code"] == "engine_protocol_error"
    _assert_still_serving(url)


def _wait_for(condition: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def test_client_disconnect_cancels_the_engine_request(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "slow", text="x", chunks=["tok "] * 200, delay=0.02)
    cancelled = deployment.engine.cancelled
    body = {"model": MODEL, "messages": messages, "stream": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=20) as response:
        lines = response.iter_lines()
        received = [line for _, line in zip(range(6), lines, strict=False)]
        assert any("tok" in line for line in received)
    # the client closed the connection mid-stream: the engine request must be cancelled
    _wait_for(lambda: deployment.engine.cancelled >= cancelled + 1)
    _assert_still_serving(url)
    metrics = httpx.get(f"{url}/metrics").text
    assert 'status="499"' in metrics


def test_many_concurrent_streams(deployment: Deployment) -> None:
    url = deployment.sidecar()
    results: list[str] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            chunks = client(url).chat.completions.create(model=MODEL, messages=USER, stream=True)
            results.append("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert results == [deployment.engine.default.text] * 16


def test_client_disconnect_cancels_a_non_streamed_request(deployment: Deployment) -> None:
    url = deployment.sidecar()
    messages = script(deployment, "hang-whole", text="x", hang_after=0)
    cancelled = deployment.engine.cancelled
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/v1/chat/completions", json={"messages": messages}, timeout=0.5)
    # the sidecar saw the client leave and closed its engine connection
    _wait_for(lambda: deployment.engine.cancelled >= cancelled + 1)
    _wait_for(lambda: 'status="499"' in httpx.get(f"{url}/metrics").text)
    _assert_still_serving(url)


def test_send_raising_oserror_ends_the_stream_and_cancels_the_engine(
    deployment: Deployment,
) -> None:
    """ASGI servers other than uvicorn (hypercorn) raise OSError when sending to a client
    that left: the stream stops, the engine request is cancelled, 499 is recorded."""
    settings = load_settings({})
    config = SidecarConfig(
        deployment.kind, deployment.engine_server.url, MODEL, settings, timeouts=Timeouts(read=5)
    )
    app = build_app(config, adapter_for(deployment.kind), ChatTemplate.builtin(None, None))
    messages = script(deployment, "slow-oserror", text="x", chunks=["tok "] * 100, delay=0.02)
    body = json.dumps({"model": MODEL, "messages": messages, "stream": True}).encode()
    cancelled = deployment.engine.cancelled

    async def run() -> list[bytes]:
        sent: list[bytes] = []
        requests = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if requests:
                return requests.pop()
            await asyncio.sleep(3600)  # never reports a disconnect: only send() fails
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and len(sent) >= 3:
                raise OSError("client gone")
            sent.append(message.get("body", b""))

        scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
                 "headers": [(b"content-type", b"application/json")]}  # fmt: skip
        await asyncio.wait_for(app(scope, receive, send), 10)
        await app.sidecar.engine.aclose()
        return sent

    sent = asyncio.run(run())
    assert len(sent) == 3  # start, role chunk, one relayed batch; then the failing send
    _wait_for(lambda: deployment.engine.cancelled >= cancelled + 1)
    metrics = app.sidecar.metrics.render().decode()
    assert 'sidecar_requests_total{engine="' + deployment.kind + '",status="499"} 1.0' in metrics


TAG = {
    "type": "structural_tag",
    "structures": [{"begin": "<tool_call>", "schema": {"type": "object"}, "end": "</tool_call>"}],
    "triggers": ["<tool_call>"],
}


@pytest.mark.parametrize(
    "extra",
    [
        {"response_format": TAG},
        {"structured_outputs": {"structural_tag": json.dumps(TAG)}},
        {"structural_tag": json.dumps(TAG)},
    ],
    ids=["response_format", "structured_outputs", "top-level"],
)
def test_structural_tag_requests_take_v1_and_reach_the_engine(
    deployment: Deployment, extra: dict[str, Any]
) -> None:
    """docs/parser-selection.md: any structural-tag spelling is a structural-tag request (V1
    under the family defaults, also for Qwen3-Coder whose unforced default is V2); the tag is
    passed to the engine in its own field."""
    url = deployment.sidecar("qwen3_coder", "qwen3")
    body = {"model": MODEL, "messages": USER, "tools": TOOLS, **extra}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=20)
    assert response.status_code == 200, response.text
    assert response.headers["x-parser-route"] == "legacy_jail"
    plain = httpx.post(f"{url}/v1/chat/completions", json={"messages": USER, "tools": TOOLS})
    assert plain.headers["x-parser-route"] == "parser_v2"  # the tag is what moved it
    sent = deployment.engine.requests[-2]
    if deployment.kind == "sglang":
        assert json.loads(sent["sampling_params"]["structural_tag"]) == TAG
    elif deployment.kind == "vllm":  # a JSON string (vLLM 0.11.0 ignores response_format's)
        assert json.loads(sent["structured_outputs"]["structural_tag"]) == TAG
        assert "response_format" not in sent
    else:
        assert sent["response_format"] == TAG


def test_a_structural_tag_that_is_not_an_object_is_a_400(deployment: Deployment) -> None:
    url = deployment.sidecar("qwen3_coder", "qwen3")
    for extra, param in (
        ({"structured_outputs": {"structural_tag": "[1]"}}, "structured_outputs.structural_tag"),
        ({"structural_tag": 5}, "structural_tag"),
    ):
        body = {"messages": USER, **extra}
        response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=20)
        assert response.status_code == 400 and response.json()["error"]["param"] == param
