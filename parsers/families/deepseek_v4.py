"""DeepSeek V4 (`deepseek_v4`): DSML tool calls, `<think>` reasoning (the template prefills
`<think>`, so the policy starts parsing in reasoning; a DSML block start also ends it)."""

from __future__ import annotations

from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar, ReasoningGrammar
from parsers.families.deepseek_v4_facts import FACTS
from parsers.families.dsml import DsmlGrammar

_TOOLS = DsmlGrammar("deepseek_v4", spaced=False, blocks=("tool_calls",))
TOOL_GRAMMARS: dict[str, AnyToolGrammar] = {
    # Only `tool_calls`: V3.2's `function_calls` wrapper is not a V4 block (as vLLM).
    "deepseek_v4": _TOOLS,
}
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {
    # reasoning-only deployments: the block start still ends reasoning (it is answer text)
    "deepseek_v4": ReasoningGrammar(
        "deepseek_v4",
        *FACTS.think_markers(),
        end_markers=_TOOLS.start_markers[: len(_TOOLS.start_markers) - 1],
    ),
}
