"""Qwen3: Hermes-style (`hermes`) and XML-style (`qwen3_coder`) calls, `<think>` reasoning."""

from __future__ import annotations

from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar, ReasoningGrammar
from parsers.families.hermes import HermesGrammar
from parsers.families.qwen3_coder import Qwen3CoderGrammar

TOOL_GRAMMARS: dict[str, AnyToolGrammar] = {
    "hermes": HermesGrammar(),
    "qwen3_coder": Qwen3CoderGrammar(),
}
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {"qwen3": ReasoningGrammar("qwen3")}
