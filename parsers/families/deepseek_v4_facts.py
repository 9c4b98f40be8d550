"""DeepSeek V4: the family's facts (parsers.family); grammar in `parsers.families.deepseek_v4`."""

from __future__ import annotations

from parsers.family import Family, TagCalls, TagReasoning

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
    tag_reasoning=TagReasoning("<think>", "</think>"),
    tag_calls=(
        (
            "deepseek_v4",
            TagCalls(
                '<｜DSML｜invoke name="{name_attr}">\n',
                "\n</｜DSML｜invoke>",  # the newline after the last parameter (as qwen3_coder)
                "\n",
                "<｜DSML｜tool_calls>",
                "deepseek_xml",
                ("\n\n<｜DSML｜tool_calls>\n", "\n</｜DSML｜tool_calls>"),
            ),
        ),
    ),
)
