"""With `thinking=None` and no prompt, where the output starts follows the
family's chat template. For every tool parser (and its family's reasoning parser) the project's
own template (sidecar/templates, rendered by sidecar.prompt as the sidecar does) is rendered
with the default thinking state; the parser plan without a prompt must start in reasoning
exactly when that generation prompt leaves a reasoning block open, and parsing without a
prompt must give what parsing with the rendered prompt gives (docs/parser-selection.md,
"Where the output starts")."""

from __future__ import annotations

import pytest

from parsers import parse
from parsers.policy import plan_request, prefill_state, request_facts, settings_for
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS
from sidecar.prompt import ChatTemplate

# Forced families start in reasoning whatever the prompt opens (docs/parser-selection.md):
# Kimi K2.5's model writes its reasoning first without an opener in the prompt.
FORCED = {"kimi_k25"}
# Without a prompt GLM parses as vLLM's glm45 reasoning parser does, which is what the
# GLM-4.5/4.6 template (tool parser name `glm45`) leads to; GLM-4.7's template (the canonical
# `glm47`) prefills `<think>`, and the sidecar's prompt shows the parser that.
NO_PROMPT_TEMPLATE = {"glm47": "glm45"}
CLOSERS = {
    "kimi_k3": "<|close|>think<|sep|>",
    "gemma4": "<channel|>",
    "muse": "<|eom|>",
}


def _pairs() -> list[tuple[str, str, int]]:
    out = []
    for tool in sorted({p.canonical for p in TOOL_PARSERS.values()}):
        family = TOOL_PARSERS[tool].family
        reasoning = next(n for n, p in REASONING_PARSERS.items() if p.family == family)
        out.append((tool, reasoning, max(family.generations)))
    return out


def _rendered(tool: str, reasoning: str, gen: int) -> tuple[str, str, bool]:
    settings = settings_for(tool, reasoning, gen)
    thinking = request_facts(settings, {}).thinking
    template = ChatTemplate.builtin(settings.family, NO_PROMPT_TEMPLATE.get(tool, tool))
    prompt = template.render([{"role": "user", "content": "hi"}], [], thinking=thinking)
    start = plan_request(settings, {}, prompt=None).start_in_reasoning
    return template.name, prompt, start


@pytest.mark.parametrize(("tool", "reasoning", "gen"), _pairs())
def test_default_start_follows_the_family_template(tool: str, reasoning: str, gen: int) -> None:
    name, prompt, start = _rendered(tool, reasoning, gen)
    opens = prefill_state(reasoning, prompt) == "open"
    if reasoning in FORCED:
        assert start, f"{reasoning} is forced into reasoning"
    else:
        assert start is opens, f"{name} ends {prompt[-40:]!r}; plan starts in reasoning: {start}"
    # what a library call without a prompt gives is what the sidecar's prompt gives
    closer = CLOSERS.get(reasoning, "</think>")
    for text in ("plain words", f"step one{closer}the answer"):
        kw = {"tool_parser": tool, "reasoning_parser": reasoning, "generation": gen}
        bare, prompted = parse(text, **kw), parse(text, prompt=prompt, **kw)  # type: ignore[arg-type]
        got = (bare.content, bare.reasoning_content)
        assert got == (prompted.content, prompted.reasoning_content), (name, text)


def test_every_family_is_checked() -> None:
    families = {TOOL_PARSERS[tool].family.key for tool, _, _ in _pairs()}
    assert families == {p.family.key for p in REASONING_PARSERS.values()}
    assert len(families) == 8


def test_a_prompt_that_opens_reasoning_starts_in_reasoning() -> None:
    settings = settings_for("glm47", "glm45", 2)
    template = ChatTemplate.builtin(settings.family, "glm47")
    prompt = template.render([{"role": "user", "content": "hi"}], [], thinking=None)
    assert prompt.endswith("<|assistant|><think>")
    assert plan_request(settings, {}, prompt=prompt).start_in_reasoning
    assert not plan_request(settings, {}, prompt=None).start_in_reasoning
    parsed = parse("step one</think>the answer", tool_parser="glm47", reasoning_parser="glm45",
                   generation=2, prompt=prompt)  # fmt: skip
    assert (parsed.reasoning_content, parsed.content) == ("step one", "the answer")
