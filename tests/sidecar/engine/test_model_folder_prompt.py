"""The model's own template, from its folder: the sidecar (`--tokenizer DIR`) sends the prompt
vLLM's own chat endpoint renders for the same folder and conversation, token for token.

vLLM serves the tiny model with the same template the folder holds (`chat_template.jinja`
beside this file, written into the folder's tokenizer config). Each conversation goes to
vLLM's `/v1/chat/completions` and through the sidecar; their `prompt_tokens` must be equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_harness import MODEL_NAME, post_json, start_sidecar

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 2}'},
}
CONVERSATIONS: dict[str, dict[str, Any]] = {
    "user": {"messages": [{"role": "user", "content": "Hello there"}]},
    "system": {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Name a colour."},
        ]
    },
    "tools declared": {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER],
    },
    "tool round trip": {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear"}'},
        ],
        "tools": [WEATHER],
    },
    "parallel calls": {
        "messages": [
            {"role": "user", "content": "Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Both.",
                "tool_calls": [
                    CALL,
                    {**CALL, "id": "call_2", "function": {**CALL["function"], "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
        ],
        "tools": [WEATHER],
    },
    "multi-turn": {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Tell me a fact."},
        ]
    },
    "text parts": {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
            }
        ]
    },
    "developer role": {
        "messages": [
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": "Good morning"},
        ]
    },
    "non-ASCII": {"messages": [{"role": "user", "content": "Grüße aus Köln — 東京は晴れ? 🌤"}]},
    "thinking off": {
        "messages": [{"role": "user", "content": "Quick answer please"}],
        "chat_template_kwargs": {"enable_thinking": False},
    },
    "no generation prompt": {
        "messages": [{"role": "user", "content": "Hello there"}],
        "add_generation_prompt": False,
    },
    "prefill (continue_final_message)": {
        "messages": [
            {"role": "user", "content": "Name a colour."},
            {"role": "assistant", "content": "The colour is "},
        ],
        "add_generation_prompt": False,
        "continue_final_message": True,
    },
}


@pytest.fixture(scope="module")
def folder_sidecar(vllm: str, model_dir: Path, logs: Path) -> Iterator[str]:
    process, url = start_sidecar(
        vllm, None, logs, "sidecar-model-folder", extra=["--tokenizer", str(model_dir)]
    )
    try:
        yield url
    finally:
        process.stop()


def _prompt_tokens(url: str, body: dict[str, Any]) -> int:
    # tool_choice "none": vLLM started without --enable-auto-tool-choice refuses "auto"; with
    # "none" it still hands the tools to the template, as the sidecar does
    extra = {"tool_choice": "none"} if "tools" in body else {}
    status, answer = post_json(
        f"{url}/v1/chat/completions",
        {"model": MODEL_NAME, "max_tokens": 1, "temperature": 0, **extra, **body},
    )
    assert status == 200, answer
    return int(answer["usage"]["prompt_tokens"])


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_prompt_tokens_equal_vllm_chat(folder_sidecar: str, vllm: str, name: str) -> None:
    body = CONVERSATIONS[name]
    theirs = _prompt_tokens(vllm, body)
    ours = _prompt_tokens(folder_sidecar, body)
    print(f"\n{name}: vLLM chat {theirs} prompt tokens, sidecar {ours}")
    assert ours == theirs
