"""Qwen3: the family's facts (parsers.family); grammars in `parsers.families.qwen3`."""

from __future__ import annotations

from parsers.family import Family, TagCalls, TagReasoning

FACTS = Family(
    key="qwen3",
    title="Qwen3",
    generations=frozenset({1, 2}),
    reasoning_default_on=True,
    tool_parsers=(
        ("hermes", "hermes"),
        ("qwen3", "hermes"),
        ("qwen25", "hermes"),
        ("qwen3_coder", "qwen3_coder"),
    ),
    reasoning_parser="qwen3",
    grammar_module="parsers.families.qwen3",
    reasoning_markers=("<think>", "</think>"),
    chat_template="qwen3.jinja",
    tool_templates=(("qwen3_coder", "qwen3_coder.jinja"),),
    v2_default_tools=frozenset({"qwen3_coder"}),
    # Qwen3's thinking checkpoints prefill `<think>` (the hybrid ones write it: a leading opener
    # is then markup), so a request turning thinking on starts in reasoning. Left to the family
    # default, our Qwen3 template opens nothing.
    prefilled_when_asked=True,
    tag_reasoning=TagReasoning("<think>", "</think>", "\n\n"),
    tag_calls=(
        (
            "hermes",
            TagCalls(
                '<tool_call>\n{"name": {name_json}, "arguments": ',
                "}\n</tool_call>",
                "\n",
                "<tool_call>",
                "json",
            ),
        ),
        (
            "qwen3_coder",
            # the newline after the last parameter is the end's: before xgrammar 0.1.33 the
            # style takes no blank after its last parameter
            TagCalls(
                "<tool_call>\n<function={name}>\n",
                "\n</function>\n</tool_call>",
                "\n",
                "<tool_call>",
                "qwen_xml",
            ),
        ),
    ),
)
