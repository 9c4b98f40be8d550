"""Forced tool choices as structural tags in each family's own call syntax (pure functions).

For `tool_choice: "required"` or a named tool the engine is asked for a structural tag
(xgrammar's "format" API) that is a sequence of:

1. the reasoning prefix, decided from the rendered prompt (`reasoning_start`): a prompt that
   left reasoning open gives free text up to the family's end marker; thinking on without an
   opened block gives the family's opener, then free text up to its end marker; thinking off
   gives nothing. A family whose calls follow an answer channel (Kimi K3's `response`) has it
   written empty after reasoning, or closed when the prompt ends inside it. The tag is the
   one owner of the reasoning block: the engine's own reasoning gate must stay off
   (docs/sidecar.md, "Forced tool choices");
2. the calls, written as the family's template writes them and its parser reads them
   (`SYNTAX`): `required` is a list of at least one call (`stop_after_first` under
   `parallel_tool_calls: false`), a named choice exactly one call of that tool.

Each call's arguments follow the tool's `parameters` schema (pinned, strict or not; a tool
without parameters takes any object). Families without a JSON-expressible argument syntax
(Gemma 4), or whose argument style the engine's grammar version lacks (`TagGrammar`), keep
the guided-JSON call array, behind the same reasoning prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from parsers.errors import ConfigError
from parsers.family import Family, TagCalls, TagReasoning
from parsers.plan import ParsePlan
from parsers.policy import prefill_state
from parsers.registry import FAMILIES
from parsers.schema import is_string_type, schema_types
from sidecar.errors import APIError
from sidecar.output_schema import named_schema, required_schema
from sidecar.toolschema import ANY_OBJECT, check_tools, parameters, standalone, tool_name

Format = dict[str, Any]
Start = Literal["open", "opener", "none"]
ForcedMode = Literal["structural-tag", "guided-json"]

# The newest engine this release was tested with: vLLM 0.32 (xgrammar 0.2.8).
DEFAULT_GRAMMAR = (0, 2, 8)


@dataclass(frozen=True)
class TagGrammar:
    """The structural-tag features of the engine's grammar library (xgrammar) version:
    only what that version accepts is emitted."""

    version: tuple[int, ...] = DEFAULT_GRAMMAR

    @property
    def xml_styles(self) -> bool:
        """`json_schema` `style` `qwen_xml` and `deepseek_xml` (0.1.32; until 0.1.33 they take
        no blank between parameters, so the model writes them without newlines)."""
        return self.version >= (0, 1, 32)

    @property
    def glm_style(self) -> bool:
        """`style` `glm_xml` (0.1.33)."""
        return self.version >= (0, 1, 33)

    @property
    def optional(self) -> bool:
        """The `optional` element, and blanks between XML-style parameters (0.1.33)."""
        return self.version >= (0, 1, 33)

    @property
    def dsml_v41_style(self) -> bool:
        """`style` `deepseek_v4_1_xml`: DSML parameters with V4.1's spaced token (0.2.7)."""
        return self.version >= (0, 2, 7)

    @property
    def xml_any_object(self) -> bool:
        """XML argument styles taking a schema without properties (any object): 0.2.7."""
        return self.version >= (0, 2, 7)

    @property
    def kimi_k3_style(self) -> bool:
        """`style` `kimi_k3_xml`: Kimi K3's typed `argument` channels (0.2.7)."""
        return self.version >= (0, 2, 7)

    @property
    def whitespace_bound(self) -> bool:
        """`json_schema` `max_whitespace_cnt` (0.2.8)."""
        return self.version >= (0, 2, 8)

    @property
    def value_excludes(self) -> bool:
        """`json_schema` `excludes`: text string values must not hold (0.2.8)."""
        return self.version >= (0, 2, 8)

    @classmethod
    def parse(cls, text: str, flag: str) -> TagGrammar:
        parts = text.strip().split(".")
        if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            raise ConfigError(f"{flag} {text!r}: expected an xgrammar version such as 0.2.8")
        version = tuple(int(p) for p in parts)
        if version < (0, 1, 25):
            raise ConfigError(
                f"{flag} {text!r}: structural tags with a format need xgrammar 0.1.25 or "
                "newer; use --forced-tool-choice guided-json for older engines"
            )
        return cls(version)


@dataclass(frozen=True)
class ForcedChoice:
    """How forced tool choices are constrained (startup configuration)."""

    mode: ForcedMode = "structural-tag"
    grammar: TagGrammar = TagGrammar()

    def describe(self) -> str:
        if self.mode == "guided-json":
            return self.mode
        return f"{self.mode} (xgrammar {'.'.join(map(str, self.grammar.version))})"


# The families' facts (`Family.tag_reasoning`, `Family.tag_calls`): per family key, the
# reasoning block; per canonical tool parser, the calls
REASONING: dict[str, TagReasoning] = {
    f.key: f.tag_reasoning for f in FAMILIES if f.tag_reasoning is not None
}
SYNTAX: dict[str, TagCalls] = {name: calls for f in FAMILIES for name, calls in f.tag_calls}


def const(value: str) -> Format:
    return {"type": "const_string", "value": value}


def tag(begin: str, content: Format, end: str) -> Format:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def sequence(*elements: Format) -> Format:
    flat: list[Format] = []
    for element in elements:
        flat.extend(element["elements"] if element["type"] == "sequence" else [element])
    return flat[0] if len(flat) == 1 else {"type": "sequence", "elements": flat}


# Consecutive whitespace allowed between JSON tokens in arguments (where the grammar can bound
# it): room for `", "` and a two-space indent, none for a model padding until max_tokens.
JSON_WHITESPACE = 4


def json_schema(
    schema: Mapping[str, Any], style: str | None = None, grammar: TagGrammar | None = None
) -> Format:
    out: Format = {"type": "json_schema", "json_schema": dict(schema)}
    if style is not None:
        out["style"] = style
    elif grammar is not None and grammar.whitespace_bound:
        out["max_whitespace_cnt"] = JSON_WHITESPACE
    return out


def reasoning_start(family: Family, prompt: str, thinking: bool) -> Start:
    """Where the output starts, from the rendered prompt (the parsers' prefill facts):
    inside an opened block, before an opener the model must write, or after reasoning."""
    state = prefill_state(family.reasoning_parser, prompt)
    if state == "open":
        return "open"
    if state == "closed" or not thinking:
        return "none"
    return "opener"


def reasoning_prefix(
    reasoning: TagReasoning, start: Start, prompt: str = "", answer: bool = False
) -> list[Format]:
    """What comes before the calls; with `answer`, up to the end of the family's answer
    channel (the calls follow it)."""
    out: list[Format] = []
    if start != "none":
        opener = "" if start == "open" else reasoning.opener
        out.append(tag(opener, {"type": "any_text"}, reasoning.closer))
        if reasoning.joiner:
            out.append(const(reasoning.joiner))
    if answer and reasoning.answer is not None:
        begin, end = reasoning.answer
        inside = start == "none" and prompt.rstrip().endswith(begin)
        out.append(const(end if inside else begin + end))
    return out


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;")


def _atem_value(prop: Mapping[str, Any], root: Mapping[str, Any], grammar: TagGrammar) -> Format:
    """A Muse parameter value: a declared plain string is its text as written (the parser
    never reads it as JSON), anything else JSON."""
    types = schema_types(prop)
    if len(types) == 1 and is_string_type(types[0]):
        choices = prop.get("enum")
        if isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices):
            return {"type": "or", "elements": [const(c) for c in choices]}
        return {"type": "any_text"}
    return json_schema(standalone(prop, root), grammar=grammar)


def _atem_args(
    param: tuple[str, str], name: str, params: Mapping[str, Any], grammar: TagGrammar
) -> Format:
    """Muse's ATEM parameters (`<atem:parameter name="K">V</atem:parameter>`, one a line),
    one element per declared property: the required ones in order, then the optional ones
    (each `optional` from xgrammar 0.1.33; before, a list of them, where one may repeat)."""
    props = params.get("properties")
    if params is ANY_OBJECT or (not props and params.get("type") == "object"):
        # any object: any parameters (values are JSON or text, no markup inside)
        # (the tags hold no regex metacharacter: written as they stand)
        begin = param[0].replace("{key_attr}", '[^"<>]+')
        return {"type": "regex", "pattern": f"({begin}[^<]*{param[1]}\\n)*"}
    if not isinstance(props, Mapping) or params.get("type", "object") != "object":
        raise APIError(
            400,
            f"tool {name!r}: Muse calls name each parameter, so its parameters must be an "
            "object schema with 'properties'",
            param="tools",
        )
    wanted = set(params.get("required") or ())

    def one(key: str) -> Format:
        value = _atem_value(props[key], params, grammar)
        return tag(param[0].replace("{key_attr}", _attr(key)), value, param[1])

    required = [one(k) for k in props if k in wanted]
    optional = [one(k) for k in props if k not in wanted]
    # one a line: a newline before every parameter but the first required one
    elements: list[Format] = []
    for element in required:
        elements.extend((const("\n"), element) if elements else (element,))
    if optional and grammar.optional:
        elements.extend(
            {"type": "optional", "content": sequence(const("\n"), element)} for element in optional
        )
    elif optional:  # the last element: before 0.1.33 only a sequence's last may be unbounded
        elements.append(const("\n"))
        elements.append({"type": "tags_with_separator", "tags": optional, "separator": "\n"})
    return sequence(*elements) if elements else const("")


def _args(syntax: TagCalls, tool: Mapping[str, Any], grammar: TagGrammar) -> Format | None:
    """One call's argument element, or None when `grammar` lacks what it needs."""
    params = parameters(tool)
    args = _args_value(syntax, params, tool_name(tool), grammar)
    if args is None or syntax.index is None:
        return args
    return sequence({"type": "regex", "pattern": syntax.index}, const(syntax.args_begin), args)


def _args_value(
    syntax: TagCalls, params: Mapping[str, Any], name: str, grammar: TagGrammar
) -> Format | None:
    kind = syntax.args
    if kind == "json":
        return json_schema(params, grammar=grammar)
    if kind == "deepseek_v4_1_xml" and not grammar.dsml_v41_style:
        kind = "deepseek_xml"  # the unspaced parameter tag, which the parser reads too
    if kind == "kimi_k3_xml":
        if not grammar.kimi_k3_style:
            return None
        args = json_schema(params, kind)
        if syntax.excludes and grammar.value_excludes:
            args["excludes"] = list(syntax.excludes)
        return args
    if kind in ("qwen_xml", "deepseek_xml", "deepseek_v4_1_xml", "glm_xml"):
        supported = grammar.glm_style if kind == "glm_xml" else grammar.xml_styles
        if not params.get("properties") and not grammar.xml_any_object:
            supported = False  # older styles fail on (or refuse) an object without properties
        return json_schema(params, kind) if supported else None
    assert syntax.param is not None  # (the `atem` style's)
    return _atem_args(syntax.param, name, params, grammar)


def _call(syntax: TagCalls, tool: Mapping[str, Any], args: Format) -> Format:
    name = tool_name(tool)
    begin = (
        syntax.begin.replace("{name_json}", _json_string(name))
        .replace("{name_attr}", _attr(name))
        .replace("{name}", name)
    )
    return tag(begin, args, syntax.end)


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _calls(
    syntax: TagCalls, tools: list[Mapping[str, Any]], grammar: TagGrammar
) -> list[Format] | None:
    calls: list[Format] = []
    for tool in tools:
        args = _args(syntax, tool, grammar)
        if args is None:
            return None
        calls.append(_call(syntax, tool, args))
    return calls


def _call_list(syntax: TagCalls, calls: list[Format], parallel: bool) -> Format:
    block: Format = {
        "type": "tags_with_separator",
        "tags": calls,
        "separator": syntax.separator,
        "at_least_one": True,
    }
    if not parallel:
        block["stop_after_first"] = True
    return block


def native_calls(
    syntax: TagCalls,
    tools: tuple[Mapping[str, Any], ...],
    named: str | None,
    parallel: bool,
    grammar: TagGrammar,
) -> Format | None:
    """The calls element: one call of `named`, else a list of at least one call of any
    declared tool (one only when not `parallel`); None when `grammar` cannot express it."""
    calls = _calls(syntax, [t for t in tools if named is None or tool_name(t) == named], grammar)
    if calls is None:
        return None
    block = calls[0] if named is not None else _call_list(syntax, calls, parallel)
    if syntax.section is None:
        return block
    # a tag, not a sequence: before xgrammar 0.1.33 only a sequence's last element may be
    # unbounded (the call list is)
    return tag(syntax.section[0], block, syntax.section[1])


@dataclass(frozen=True)
class Constraint:
    """What the engine is asked for: a JSON schema or a structural tag (or neither)."""

    guided_json: Mapping[str, Any] | None = None
    structural_tag: Mapping[str, Any] | None = None


def forced_constraint(
    *,
    family: Family | None,
    tool_parser: str | None,
    tools: tuple[Mapping[str, Any], ...],
    named: str | None,
    parallel: bool,
    prompt: str,
    thinking: bool,
    choice: ForcedChoice,
) -> Constraint:
    """The constraint of a forced tool choice (`named`: the named tool, else `required`)."""
    fallback = named_schema(tools, named) if named else required_schema(tools, parallel)
    if choice.mode == "guided-json" or family is None:
        return Constraint(guided_json=fallback)
    syntax = SYNTAX.get(tool_parser or "")
    calls = (
        native_calls(syntax, tools, named, parallel, choice.grammar) if syntax is not None else None
    )
    # native calls follow the answer channel; the guided JSON goes where the answer goes
    prefix = _prefix(family, prompt, thinking, answer=calls is not None)
    if calls is None:
        if not prefix:
            return Constraint(guided_json=fallback)
        calls = json_schema(fallback, grammar=choice.grammar)
    return Constraint(structural_tag={"type": "structural_tag", "format": sequence(*prefix, calls)})


def _prefix(family: Family, prompt: str, thinking: bool, answer: bool = False) -> list[Format]:
    reasoning = REASONING.get(family.key)
    if reasoning is None:
        return []
    start = reasoning_start(family, prompt, thinking)
    return reasoning_prefix(reasoning, start, prompt, answer)


def is_strict(tool: Mapping[str, Any]) -> bool:
    return tool.get("function", {}).get("strict") is True


def strict_auto_tag(
    *,
    family: Family | None,
    tool_parser: str | None,
    tools: tuple[Mapping[str, Any], ...],
    parallel: bool,
    prompt: str,
    thinking: bool,
    choice: ForcedChoice,
) -> Mapping[str, Any] | None:
    """`tool_choice` auto with a `strict` tool: free text, and any call the model starts (at
    the family's call trigger) follows its tool's schema (a non-strict tool's arguments:
    any object); None when nothing is constrained (no strict tool, guided-JSON mode, a
    family without a trigger, a grammar version lacking the argument style)."""
    if choice.mode != "structural-tag" or family is None or not any(map(is_strict, tools)):
        return None
    syntax = SYNTAX.get(tool_parser or "")
    if syntax is None or syntax.trigger is None:
        return None
    loose: list[Mapping[str, Any]] = [
        t if is_strict(t) else {**t, "function": {**t["function"], "parameters": ANY_OBJECT}}
        for t in tools
    ]
    calls = _calls(syntax, loose, choice.grammar)
    if calls is None:
        return None
    tags = calls
    if syntax.section is not None:
        # the section opens at the trigger (the blanks before it are free text)
        begin = syntax.section[0].lstrip()
        tags = [tag(begin, _call_list(syntax, calls, parallel), syntax.section[1])]
    block: Format = {"type": "triggered_tags", "triggers": [syntax.trigger], "tags": tags}
    if not parallel:
        block["stop_after_first"] = True
    fmt = sequence(*_prefix(family, prompt, thinking), block)
    return {"type": "structural_tag", "format": fmt}


def constraint_for(
    plan: ParsePlan,
    family: Family | None,
    guided: Mapping[str, Any] | None,
    client_tag: Mapping[str, Any] | None,
    *,
    parallel: bool,
    prompt: str,
    thinking: bool,
    choice: ForcedChoice,
) -> Constraint:
    """The one constraint of a request: a forced choice's own; else the guided JSON of a JSON
    `response_format` (`guided`), the client's structural tag, or under `auto` the strict
    tools' tag. A tool schema the grammar would have to hold but cannot is a 400."""
    tools, parser = plan.tools, plan.tool_parser
    if plan.tool_mode in ("required", "named"):
        check_tools(tools)
        return forced_constraint(
            family=family,
            tool_parser=parser,
            tools=tools,
            named=plan.named_tool if plan.tool_mode == "named" else None,
            parallel=parallel,
            prompt=prompt,
            thinking=thinking,
            choice=choice,
        )
    if guided is not None or client_tag is not None:
        return Constraint(guided, client_tag if guided is None else None)
    if plan.tool_mode != "auto" or not plan.parse_tools:
        return Constraint()
    tag = strict_auto_tag(
        family=family,
        tool_parser=parser,
        tools=tools,
        parallel=parallel,
        prompt=prompt,
        thinking=thinking,
        choice=choice,
    )
    if tag is not None:
        check_tools(tools, only_strict=True)
    return Constraint(structural_tag=tag)
