"""Muse: the family's facts (parsers.family); grammar in `parsers.families.muse`."""

from __future__ import annotations

from parsers.family import NEVER, Family, Prefill

FACTS = Family(
    key="muse",
    title="Muse",
    generations=frozenset({2}),
    reasoning_default_on=True,
    tool_parsers=(("muse", "muse"), ("muse_glimmer", "muse")),
    reasoning_parser="muse",
    grammar_module="parsers.families.muse",
    reasoning_markers=None,  # the message grammar's own
    # The prompt ends with `<|start|>assistant`; prefilling the `self` (reasoning) recipient
    # means the output starts in reasoning. A closed self message has no trailing marker.
    prefill=Prefill(opener=r"<\|start\|>\s*assistant\s+to=self\s*<\|message\|>\Z", closer=NEVER),
    chat_template="muse.jinja",
    channel_reasoning=True,
)
