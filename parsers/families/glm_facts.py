"""GLM 4.5 / 4.6 / 4.7: the family's facts (parsers.family); grammar in `parsers.families.glm`."""

from __future__ import annotations

from parsers.family import Family

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
)
