"""Muse: the family's facts (parsers.family); grammar in `parsers.families.muse`."""

from __future__ import annotations

from parsers.family import NEVER, Family, Prefill, TagCalls, TagReasoning

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
    # the prompt ends with `<|start|>assistant`: each message goes on with its recipient
    tag_reasoning=TagReasoning(" to=self<|message|>", "<|eom|>", "<|start|>assistant"),
    tag_calls=(
        (
            "muse",
            TagCalls(
                ' to={name}<|message|><atem:function_calls>\n<atem:invoke name="{name_attr}">\n',
                "\n</atem:invoke>\n</atem:function_calls><|eom|>",
                "<|start|>assistant",
                None,  # its tool header starts the reasoning and answer messages too
                "atem",
                param=('<atem:parameter name="{key_attr}">', "</atem:parameter>"),
            ),
        ),
    ),
)
