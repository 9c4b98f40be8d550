"""DeepSeek V4.1: the family's facts (parsers.family); grammar in
`parsers.families.deepseek_v41`."""

from __future__ import annotations

from parsers.family import Family, TagCalls, TagReasoning

FACTS = Family(
    key="deepseek_v41",
    title="DeepSeek V4.1",
    generations=frozenset({2}),
    reasoning_default_on=True,
    tool_parsers=(("deepseek_v41", "deepseek_v41"),),
    reasoning_parser="deepseek_v41",
    grammar_module="parsers.families.deepseek_v41",
    reasoning_markers=("<think>", "</think>"),
    chat_template="deepseek_v41.jinja",
    # the template ends with `<think>` (thinking on), so without a prompt the output starts
    # inside it and a bare `</think>` ends it (tests/parsers/test_template_thinking.py)
    prefilled_without_prompt=True,
    # thinking off prefills `</think>`: the block is closed
    closer_means_off=True,
    # the template renders the effort into the prompt (docs/parsers.md)
    efforts=("none", "low", "high", "max"),
    effort_range=(1, 100),
    leading_close_means_reasoning=True,
    tag_reasoning=TagReasoning("<think>", "</think>"),
    tag_calls=(
        (
            "deepseek_v41",
            TagCalls(
                '<｜DSML｜ invoke name="{name_attr}">\n',
                "\n</｜DSML｜ invoke>",  # the newline after the last parameter (as qwen3_coder)
                "\n",
                "<｜DSML｜ calls>",
                "deepseek_v4_1_xml",
                ("\n\n<｜DSML｜ calls>\n", "\n</｜DSML｜ calls>"),
            ),
        ),
    ),
)
