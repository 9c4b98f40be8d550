"""Kimi K3: the family's facts (parsers.family); grammar in `parsers.families.kimi_k3`."""

from __future__ import annotations

from parsers.family import Family, Prefill, TagCalls, TagReasoning

FACTS = Family(
    key="kimi_k3",
    title="Kimi K3",
    generations=frozenset({1, 2}),
    reasoning_default_on=True,
    tool_parsers=(("kimi_k3", "kimi_k3"),),
    reasoning_parser="kimi_k3",
    grammar_module="parsers.families.kimi_k3",
    reasoning_markers=None,  # the channel grammar's own
    # Engines may space the channel markers' parts: accept any whitespace between them.
    prefill=Prefill(
        opener=r"<\|open\|>\s*think\s*<\|sep\|>\Z",
        closer=r"<\|close\|>\s*think\s*<\|sep\|>\Z",
    ),
    chat_template="kimi_k3.jinja",
    # the template opens reasoning in the prompt (`<|open|>think<|sep|>`), so without a prompt
    # the output starts inside it and a bare end marker ends it
    prefilled_without_prompt=True,
    channel_reasoning=True,
    # the template renders the effort into the prompt: the encoder knows low, high and max
    efforts=("none", "low", "high", "max"),
    # every assistant message has a `response` channel (empty when the turn only calls)
    # before its `tools` section; thinking off, the prompt ends inside it
    tag_reasoning=TagReasoning(
        "<|open|>think<|sep|>",
        "<|close|>think<|sep|>",
        answer=("<|open|>response<|sep|>", "<|close|>response<|sep|>"),
    ),
    tag_calls=(
        (
            "kimi_k3",
            # the elements come back to back: no blanks between calls or around them
            TagCalls(
                '<|open|>call tool="{name_attr}" index="',
                "<|close|>call<|sep|>",
                "",
                "<|open|>tools<|sep|>",
                "kimi_k3_xml",
                ("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
                index="[1-9][0-9]{0,2}",
                args_begin='"<|sep|>',
                excludes=("<|open|>", "<|close|>", "<|sep|>"),
            ),
        ),
    ),
)
