"""Kimi K2 / K2.5: the family's facts (parsers.family); grammar in `parsers.families.kimi_k2`."""

from __future__ import annotations

from parsers.family import Family, TagCalls, TagReasoning

FACTS = Family(
    key="kimi_k2",
    title="Kimi K2 / K2.5",
    generations=frozenset({1, 2}),
    reasoning_default_on=True,
    tool_parsers=(("kimi_k2", "kimi_k2"),),
    reasoning_parser="kimi_k25",
    grammar_module="parsers.families.kimi_k2",
    reasoning_markers=("<think>", "</think>"),
    chat_template="kimi_k2.jinja",
    # forced: a leading `<think>` is only the opener
    forced_start=True,
    tag_reasoning=TagReasoning("<think>", "</think>"),
    tag_calls=(
        (
            "kimi_k2",
            TagCalls(
                "<|tool_call_begin|>functions.{name}:",
                "<|tool_call_end|>",
                "\n",
                "<|tool_calls_section_begin|>",
                "json",
                ("<|tool_calls_section_begin|>\n", "\n<|tool_calls_section_end|>"),
                index="[0-9]{1,3}",
                args_begin="<|tool_call_argument_begin|>",
            ),
        ),
    ),
)
