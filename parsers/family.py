"""What a model family declares about itself: one `Family` value per family.

See docs/parsers-internals.md, "Adding a family".

Each family's facts module (`parsers/families/<key>_facts.py`) holds its one `FACTS`; the
registry (parser names), the request policy (thinking default, prefill, reasoning effort),
routing (default generation), the sidecar's built-in chat templates and the batch API read
them from there, so nothing else names a family or its markers. The facts modules import
nothing but this module: reading every family's facts costs no grammar import (a process
imports only the grammars it serves, `parsers.families`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

OPENAI_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")


def ends_with(marker: str) -> str:
    """A prefill pattern: the prompt (right-stripped) ends with `marker`, as written."""
    return re.escape(marker) + r"\Z"


NEVER = r"(?!)"  # a prefill pattern that matches no prompt


@dataclass(frozen=True, slots=True)
class Prefill:
    """Regex sources searched at the end of the rendered prompt (right-stripped). Kept as
    sources: `re` compiles (and caches) only those of the parsers a process serves."""

    opener: str  # the prompt ends inside reasoning: the output starts in it
    closer: str  # the prompt ends with a closed reasoning block


@dataclass(frozen=True, slots=True)
class TagReasoning:
    """A reasoning block as the family's built-in template writes it (a forced tool choice's
    structural tag writes it so)."""

    opener: str  # what the model writes to open reasoning
    closer: str  # what ends it
    joiner: str = ""  # written between the reasoning block and the calls
    # A channel the answer text goes in, written before the calls (opener, closer): empty
    # after reasoning; a prompt ending with its opener leaves the output inside it, so the
    # calls follow its closer. None: the calls follow the reasoning block directly.
    answer: tuple[str, str] | None = None


# How a call's arguments are written: a JSON object, or one of xgrammar's parameter styles
# (`json_schema` `style`), or Muse's ATEM parameter tags (`TagCalls.param`)
ArgStyle = Literal[
    "json", "qwen_xml", "glm_xml", "deepseek_xml", "deepseek_v4_1_xml", "kimi_k3_xml", "atem"
]


@dataclass(frozen=True, slots=True)
class TagCalls:
    """One tool parser's calls as the family's built-in template writes them (a forced tool
    choice's structural tag writes them so). `begin` holds `{name}` (as written), `{name_json}`
    (a JSON string) or `{name_attr}` (a double-quoted attribute value)."""

    begin: str
    end: str
    separator: str  # between two calls
    # Under `auto` with strict tools: what starts a call (or the section); None: no tag
    trigger: str | None
    args: ArgStyle
    section: tuple[str, str] | None = None  # what encloses all calls
    # a call index written after `begin` (a regex), then `args_begin`, then the arguments
    index: str | None = None
    args_begin: str = ""
    # `atem`: one parameter's tags, the begin holding `{key_attr}`
    param: tuple[str, str] | None = None
    # text a string value must not hold (the parser reads it as markup), where the grammar
    # version can exclude it
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """A model family's facts. Names are canonical unless said otherwise."""

    key: str  # registry family key (also `ParsePlan.family`, the templates' `family`)
    title: str  # as error messages name the family
    generations: frozenset[int]  # {1, 2}, or {2} for V2-only families
    reasoning_default_on: bool  # thinking when neither the request nor the deployment says
    # (name as a deployment may write it, normalized -> canonical grammar name)
    tool_parsers: tuple[tuple[str, str], ...]
    reasoning_parser: str  # the family's one reasoning parser
    grammar_module: str  # holds TOOL_GRAMMARS / REASONING_GRAMMARS (parsers.families)
    # (open, close) reasoning markers of a `<think>`-style family, which its grammar module
    # builds its ReasoningGrammar from; None: the markers are the grammar's own (a channel
    # grammar, Gemma's labelled channel)
    reasoning_markers: tuple[str, str] | None
    chat_template: str  # built-in template file in sidecar/templates
    prefill: Prefill | None = None  # None: the reasoning markers, as written
    # tool parser -> its own template variant (the family's template otherwise)
    tool_templates: tuple[tuple[str, str], ...] = ()
    # Tool parsers whose unforced `auto` requests go to V2 under DYN_PARSER_VERSION auto.
    v2_default_tools: frozenset[str] = frozenset()
    # Output starts in reasoning even without prefill evidence (the template always prefills).
    forced_start: bool = False
    # Without a prompt, thinking on: the template opens reasoning in the prompt.
    prefilled_without_prompt: bool = False
    # Without a prompt, thinking turned on by the request itself: the checkpoints prefill.
    prefilled_when_asked: bool = False
    # A closed reasoning block at the end of the prompt means thinking is off.
    closer_means_off: bool = False
    # The tool grammar carries the reasoning channel: a deployment naming only the tool parser
    # still has its reasoning channel parsed (as content without a reasoning parser).
    channel_reasoning: bool = False
    # `reasoning_effort` values accepted, and an integer range when integers are accepted too
    efforts: tuple[str, ...] = OPENAI_EFFORTS
    effort_range: tuple[int, int] | None = None
    # Batch only: without prefill information, a leading unquoted close marker with no opener
    # means the text before it was reasoning.
    leading_close_means_reasoning: bool = False
    # Forced tool choices' structural tags: the reasoning block and, per canonical tool
    # parser, the calls, as the built-in templates write them (none: guided JSON)
    tag_reasoning: TagReasoning | None = None
    tag_calls: tuple[tuple[str, TagCalls], ...] = ()

    def think_markers(self) -> tuple[tuple[str], tuple[str]]:
        """(open markers, close markers) for the family's `ReasoningGrammar`."""
        if self.reasoning_markers is None:
            raise ValueError(f"family {self.key!r} declares no reasoning markers")
        opener, closer = self.reasoning_markers
        return (opener,), (closer,)

    def prefill_patterns(self) -> Prefill | None:
        """What `parsers.policy.prefill_state` searches the prompt's end for."""
        if self.prefill is not None or self.reasoning_markers is None:
            return self.prefill
        opener, closer = self.reasoning_markers
        return Prefill(ends_with(opener), ends_with(closer))

    def template_for(self, tool_parser: str | None) -> str:
        """The built-in chat template for this family and tool parser (as given or canonical)."""
        # A tool parser named as given (an alias such as GLM's `glm45` picks its model
        # generation's template), else its canonical grammar's, else the family's.
        templates = dict(self.tool_templates)
        name = tool_parser or ""
        canonical = dict(self.tool_parsers).get(name, name)
        return templates.get(name) or templates.get(canonical) or self.chat_template
