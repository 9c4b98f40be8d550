"""Qwen3: Hermes-style (`hermes`) and XML-style (`qwen3_coder`) calls, `<think>` reasoning."""

from __future__ import annotations

from parsers.families.base import (
    AnyReasoningGrammar,
    AnyToolGrammar,
    LazyGrammars,
    ReasoningGrammar,
)
from parsers.families.qwen3_facts import FACTS


def _hermes() -> AnyToolGrammar:
    from parsers.families.hermes import HermesGrammar

    return HermesGrammar()


def _qwen3_coder() -> AnyToolGrammar:
    from parsers.families.qwen3_coder import Qwen3CoderGrammar

    return Qwen3CoderGrammar()


# Each grammar's module is imported when it is first looked up (Hermes alone does not need
# Qwen3-Coder's XML argument machinery).
TOOL_GRAMMARS = LazyGrammars({"hermes": _hermes, "qwen3_coder": _qwen3_coder})
# `<tool_call>` ends reasoning also when no tool parser is configured (the model skipped
# `</think>`); the markup is then answer text, as vLLM's qwen3 reasoning parser does.
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {
    "qwen3": ReasoningGrammar(
        "qwen3", *FACTS.think_markers(), ("<tool_call>",), stray_markers=("<|im_end|>",)
    )
}
