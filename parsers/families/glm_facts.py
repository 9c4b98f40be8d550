"""GLM 4.5 / 4.6 / 4.7: the family's facts (parsers.family); grammar in `parsers.families.glm`."""

from __future__ import annotations

from parsers.family import Family, TagCalls, TagReasoning

FACTS = Family(
    key="glm",
    title="GLM 4.5 / 4.6 / 4.7",
    generations=frozenset({1, 2}),
    reasoning_default_on=True,
    tool_parsers=(("glm47", "glm47"), ("glm45", "glm47")),
    reasoning_parser="glm45",
    grammar_module="parsers.families.glm",
    reasoning_markers=("<think>", "</think>"),
    chat_template="glm.jinja",
    tool_templates=(("glm45", "glm45.jinja"),),
    tag_reasoning=TagReasoning("<think>", "</think>"),
    tag_calls=(
        ("glm47", TagCalls("<tool_call>{name}", "</tool_call>", "\n", "<tool_call>", "glm_xml")),
    ),
)
