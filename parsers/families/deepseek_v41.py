"""DeepSeek V4.1 (`deepseek_v41`, V2 only): DSML with a space after the tag token and block
name `calls`; `<think>` reasoning, started by the prompt's prefill (policy). In batch, a
leading unquoted `</think>` without an opener means the text before it was reasoning
(`parsers.api.parse`)."""

from __future__ import annotations

from parsers.families.base import AnyReasoningGrammar, AnyToolGrammar, ReasoningGrammar
from parsers.families.deepseek_v41_facts import FACTS
from parsers.families.dsml import DsmlGrammar

_TOOLS = DsmlGrammar("deepseek_v41", spaced=True, blocks=("calls",))
TOOL_GRAMMARS: dict[str, AnyToolGrammar] = {"deepseek_v41": _TOOLS}
REASONING_GRAMMARS: dict[str, AnyReasoningGrammar] = {
    # reasoning-only deployments: the block start still ends reasoning (it is answer text)
    "deepseek_v41": ReasoningGrammar(
        "deepseek_v41",
        *FACTS.think_markers(),
        end_markers=_TOOLS.start_markers[: len(_TOOLS.start_markers) - 1],
    ),
}
