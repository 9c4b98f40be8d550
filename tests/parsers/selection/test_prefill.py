"""Prompt prefill detection (docs/parser-selection.md) and the families' forced-start rules."""

from __future__ import annotations

import pytest

from parsers import load_settings
from parsers.policy import plan_request

# reasoning parser -> (tool parser of the family, the opener a prefilled prompt ends with)
OPENERS = {
    "qwen3": ("hermes", "<think>"),
    "glm45": ("glm47", "<think>"),
    "deepseek_v4": ("deepseek_v4", "<think>"),
    "deepseek_v41": ("deepseek_v41", "<think>"),
    "kimi_k25": ("kimi_k2", "<think>"),
    "kimi_k3": ("kimi_k3", "<|open|>think<|sep|>"),
    "gemma4": ("gemma4", "<|channel>thought\n"),
    "muse": ("muse", "<|start|>assistant to=self<|message|>"),
}
# Families whose output starts in reasoning whatever the prompt says (parsers.md: kimi_k25 forced;
# the DeepSeek V4 template always prefills).
FORCED = {"kimi_k25", "deepseek_v4"}
TRAILING = ["", "\n", "\n\n", "  \t\n", "\r\n"]


def _start(
    reasoning: str, prompt: str | None, *, thinking: bool | None = None
) -> tuple[bool, bool]:
    tool = OPENERS[reasoning][0]
    settings = load_settings({}, tool_parser=tool, reasoning_parser=reasoning)
    request = {} if thinking is None else {"thinking": thinking}
    plan = plan_request(settings, request, prompt)
    return plan.reasoning, plan.start_in_reasoning


@pytest.mark.parametrize("tail", TRAILING, ids=repr)
@pytest.mark.parametrize("reasoning", sorted(OPENERS))
def test_prompt_ending_with_the_opener_starts_in_reasoning(reasoning: str, tail: str) -> None:
    prompt = "<|user|>What is the weather?<|assistant|>" + OPENERS[reasoning][1] + tail
    assert _start(reasoning, prompt) == (True, True)


@pytest.mark.parametrize("reasoning", sorted(set(OPENERS) - FORCED))
def test_opener_earlier_in_the_prompt_does_not_start_in_reasoning(reasoning: str) -> None:
    opener = OPENERS[reasoning][1]
    prompt = f"system: the model writes {opener} before it thinks.\nuser: hi\nassistant:"
    # The opener followed by a quote or more text is not a prefill either.
    for text in (prompt, prompt + " " + opener + '"', prompt + opener + " ok"):
        assert _start(reasoning, text)[1] is False, text


@pytest.mark.parametrize("reasoning", sorted(set(OPENERS) - FORCED - {"kimi_k3", "deepseek_v41"}))
def test_plain_prompt_and_no_prompt_start_in_the_response(reasoning: str) -> None:
    assert _start(reasoning, None)[1] is False
    assert _start(reasoning, "user: hi\nassistant:")[1] is False


@pytest.mark.parametrize("reasoning", sorted(FORCED))
def test_forced_families_start_in_reasoning_without_prefill(reasoning: str) -> None:
    assert _start(reasoning, None) == (True, True)
    assert _start(reasoning, "user: hi\nassistant:") == (True, True)
    # ...unless thinking is off, or the prompt already closed the block.
    assert _start(reasoning, None, thinking=False) == (False, False)
    assert _start(reasoning, "assistant:<think>\n\n</think>\n\n")[1] is False


@pytest.mark.parametrize(
    "opener",
    [
        "<|open|>think<|sep|>",
        "<|open|> think <|sep|>",
        "<|open|>\nthink\n<|sep|>",
        "<|open|>\t think\t\t<|sep|>",
        "<|open|>  think<|sep|>   \n",
    ],
    ids=repr,
)
def test_kimi_k3_opener_with_spaced_parts(opener: str) -> None:
    assert _start("kimi_k3", "<|open|>user<|sep|>hi<|close|>user<|sep|>" + opener) == (True, True)


def test_kimi_k3_is_normally_prefilled() -> None:
    assert _start("kimi_k3", None) == (True, True)  # no prompt: the template prefills
    assert _start("kimi_k3", "<|open|>response<|sep|>")[1] is False  # a prompt that does not
    assert _start("kimi_k3", "x<|open|>think<|sep|>y<|close|> think <|sep|>")[1] is False
    assert _start("kimi_k3", "<|open|>thinking<|sep|>")[1] is False


@pytest.mark.parametrize("tail", TRAILING, ids=repr)
def test_deepseek_v41_prompt_ending_with_close_means_reasoning_off(tail: str) -> None:
    prompt = "<｜User｜>hi<｜Assistant｜></think>" + tail
    assert _start("deepseek_v41", prompt) == (False, False)
    # Even if the request asked for thinking: the prompt is what the model saw.
    assert _start("deepseek_v41", prompt, thinking=True) == (False, False)
    assert _start("deepseek_v41", "<｜Assistant｜><think>" + tail) == (True, True)


def test_deepseek_v41_starts_where_its_template_leaves_it() -> None:
    # no prompt: the template prefills `<think>` with thinking on
    assert _start("deepseek_v41", None) == (True, True)
    assert _start("deepseek_v41", None, thinking=False) == (False, False)
    assert _start("deepseek_v41", "user: hi\nassistant:") == (True, False)


def test_prefilled_opener_wins_over_a_request_that_turned_thinking_off() -> None:
    # A template that ignored the request's control still put the model inside reasoning.
    assert _start("qwen3", "assistant:<think>\n", thinking=False) == (True, True)
    assert _start("gemma4", "<|channel>thought\n") == (True, True)  # Gemma 4 default is off
    assert _start("gemma4", "model:") == (False, False)


def test_long_prompts_are_detected_by_their_end() -> None:
    body = "x" * 200_000 + "<think>" + "y" * 1000
    assert _start("qwen3", body + "<think>\n")[1] is True
    assert _start("qwen3", body)[1] is False
