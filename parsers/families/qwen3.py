"""Qwen3: Hermes-style (`hermes`) and XML-style (`qwen3_coder`) calls, `<think>` reasoning."""

from __future__ import annotations

from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar, ReasoningGrammar
from parsers.families.hermes import HermesGrammar
from parsers.families.qwen3_coder import Qwen3CoderGrammar

TOOL_GRAMMARS: dict[str, AnyToolGrammar] = {
    "hermes": HermesGrammar(),
    "qwen3_coder": Qwen3CoderGrammar(),
}
# `<tool_call>` ends reasoning also when no tool parser is configured (the model skipped
# `</think>`); the markup is then answer text, as vLLM's qwen3 reasoning parser does.
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {
    "qwen3": ReasoningGrammar("qwen3", ("<think>",), ("</think>",), ("<tool_call>",))
}
