"""DeepSeek V4: the family's facts (parsers.family); grammar in `parsers.families.deepseek_v4`."""

from __future__ import annotations

from parsers.family import Family

FACTS = Family(
    key="deepseek_v4",
    title="DeepSeek V4",
    generations=frozenset({1, 2}),
    reasoning_default_on=True,
    tool_parsers=(("deepseek_v4", "deepseek_v4"),),
    reasoning_parser="deepseek_v4",
    grammar_module="parsers.families.deepseek_v4",
    reasoning_markers=("<think>", "</think>"),
    chat_template="deepseek.jinja",
    # the template always prefills `<think>`: output starts in reasoning without evidence
    forced_start=True,
)
