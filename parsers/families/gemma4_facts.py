"""Gemma 4: the family's facts (parsers.family); grammar in `parsers.families.gemma4`."""

from __future__ import annotations

from parsers.family import Family, Prefill, TagReasoning, ends_with

FACTS = Family(
    key="gemma4",
    title="Gemma 4",
    generations=frozenset({1, 2}),
    reasoning_default_on=False,  # reasoning only when the request turns thinking on
    tool_parsers=(("gemma4", "gemma4"),),
    reasoning_parser="gemma4",
    grammar_module="parsers.families.gemma4",
    reasoning_markers=None,  # the thought channel's tokens are the grammar's own
    prefill=Prefill(opener=ends_with("<|channel>thought"), closer=ends_with("<channel|>")),
    chat_template="gemma4.jinja",
    # the thought channel is special tokens of the tool grammar too: without a reasoning parser
    # its markers are markup and its text content
    channel_reasoning=True,
    tag_reasoning=TagReasoning("<|channel>thought\n", "<channel|>"),
)
