"""Every structural tag the sidecar builds for a forced tool choice, checked with the real
xgrammar (the engine venv's, run by `xgrammar_check.py`) and parsed by both parser
generations.

Per family x {required, named, parallel_tool_calls false} x {thinking on, off}, with the
prompt rendered by the family's built-in template (so the reasoning prefix comes from the
prompt, as when serving):
- the tag compiles;
- it accepts the family's native call text (after reasoning when thinking is on);
- it rejects a bare JSON call list, a call of an undeclared tool, arguments breaking the
  schema, (where the choice allows one call) a second call or another tool, and (Kimi K3 from
  xgrammar 0.2.8) a string value holding a channel marker;
- each accepted text parsed in every generation the family has gives exactly the forced calls.
Gemma 4 keeps the guided-JSON call array behind the reasoning prefix (docs/sidecar.md): its
accepted text is that array, so the bare list is not a rejection case there.
Checked with the engine venv's xgrammar, and with every Python named in
SIDECAR_FORGE_XGRAMMAR_PYTHONS (other xgrammar versions: the tags use only what each accepts).
A table of the results is printed per version (and kept in .reports/).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from engine_harness import engine_venv

from parsers.api import parse_text
from parsers.policy import RequestFacts, facts_for, plan_request
from parsers.registry import resolve_tool_parser
from parsers.routing import ToolChoice
from parsers.settings import ParserSettings
from sidecar.prompt import ChatTemplate
from sidecar.structural import (
    ForcedChoice,
    TagGrammar,
    forced_constraint,
    json_schema,
    strict_auto_tag,
)

HERE = Path(__file__).resolve().parent

# What pydantic writes: an enum under `$defs`, referenced; `days` optional.
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"$ref": "#/$defs/Unit"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
    "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
}
TIME = {
    "type": "object",
    "properties": {"zone": {"type": "string", "enum": ["utc", "cet"]}},
    "required": ["zone"],
    "additionalProperties": False,
}
TOOLS = (
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}},
)
STRING_PARAMS = {"city", "zone"}  # declared plain strings (Muse writes them as text)

Call = tuple[str, dict[str, Any]]
W: Call = ("get_weather", {"city": "Paris", "unit": "celsius", "days": 3})
T: Call = ("get_time", {"zone": "utc"})
UNDECLARED: Call = ("delete_files", {"zone": "utc"})
BROKEN: Call = ("get_weather", {"city": "Paris", "unit": "kelvin"})


Writer = Callable[[list[Call], TagGrammar], str]


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _j(value)


def hermes(calls: list[Call], grammar: TagGrammar) -> str:
    return "\n".join(
        f'<tool_call>\n{{"name": {_j(n)}, "arguments": {_j(a)}}}\n</tool_call>' for n, a in calls
    )


def _gap(grammar: TagGrammar) -> str:
    """Between two XML-style parameters: a newline, as the templates write, from xgrammar
    0.1.33; none before (its styles take no blank there)."""
    return "\n" if grammar.version >= (0, 1, 33) else ""


def qwen3_coder(calls: list[Call], grammar: TagGrammar) -> str:
    def one(n: str, a: dict[str, Any]) -> str:
        params = _gap(grammar).join(
            f"<parameter={k}>\n{_text(v)}\n</parameter>" for k, v in a.items()
        )
        return f"<tool_call>\n<function={n}>\n{params}\n</function>\n</tool_call>"

    return "\n".join(one(n, a) for n, a in calls)


def glm(calls: list[Call], grammar: TagGrammar) -> str:
    def one(n: str, a: dict[str, Any]) -> str:
        pairs = "".join(
            f"<arg_key>{k}</arg_key><arg_value>{_text(v)}</arg_value>" for k, v in a.items()
        )
        return f"<tool_call>{n}{pairs}</tool_call>"

    return "\n".join(one(n, a) for n, a in calls)


def dsml(token: str, block: str) -> Writer:
    def write(calls: list[Call], grammar: TagGrammar) -> str:
        # V4.1's spaced parameter tag needs its own style (xgrammar 0.2.7); before that the
        # unspaced one, which the parser reads too
        param = token if grammar.dsml_v41_style else "｜DSML｜"
        invokes = []
        for n, a in calls:
            params = _gap(grammar).join(
                f'<{param}parameter name="{k}" string="{str(isinstance(v, str)).lower()}">'
                f"{_text(v)}</{param}parameter>"
                for k, v in a.items()
            )
            invokes.append(f'<{token}invoke name="{n}">\n{params}\n</{token}invoke>')
        return f"\n\n<{token}{block}>\n" + "\n".join(invokes) + f"\n</{token}{block}>"

    return write


def kimi_k2(calls: list[Call], grammar: TagGrammar) -> str:
    body = "\n".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|>"
        for i, (n, a) in enumerate(calls)
    )
    return f"<|tool_calls_section_begin|>\n{body}\n<|tool_calls_section_end|>"


def kimi_k3(calls: list[Call], grammar: TagGrammar) -> str:
    """Typed argument channels (strings as text, numbers as JSON), back to back."""

    def arg(k: str, v: Any) -> str:
        kind = "string" if isinstance(v, str) else "number"
        return f'<|open|>argument key="{k}" type="{kind}"<|sep|>{_text(v)}<|close|>argument<|sep|>'

    body = "".join(
        f'<|open|>call tool="{n}" index="{i + 1}"<|sep|>'
        + "".join(arg(k, v) for k, v in a.items())
        + "<|close|>call<|sep|>"
        for i, (n, a) in enumerate(calls)
    )
    return f"<|open|>tools<|sep|>{body}<|close|>tools<|sep|>"


def muse(calls: list[Call], grammar: TagGrammar) -> str:
    def one(n: str, a: dict[str, Any]) -> str:
        params = "\n".join(
            f'<atem:parameter name="{k}">{v if k in STRING_PARAMS else _j(v)}</atem:parameter>'
            for k, v in a.items()
        )
        return (
            f' to={n}<|message|><atem:function_calls>\n<atem:invoke name="{n}">\n{params}'
            "\n</atem:invoke>\n</atem:function_calls><|eom|>"
        )

    return "<|start|>assistant".join(one(n, a) for n, a in calls)


def guided(calls: list[Call], named: bool) -> str:
    """The guided JSON: a named choice's arguments object, else the call array. A named
    choice answered otherwise is written as a model would try it: a call object naming
    another tool, or several argument objects."""
    if named and len(calls) == 1 and calls[0][0] == "get_time":
        return _j(calls[0][1])
    if named and len(calls) == 1:
        return _j({"name": calls[0][0], "parameters": calls[0][1]})
    if named:
        return _j([a for _, a in calls])
    return _j([{"name": n, "parameters": a} for n, a in calls])


@dataclass(frozen=True)
class FamilyCase:
    tool_parser: str
    write: Writer | None  # None: the guided-JSON array (Gemma 4)
    # What the model writes before the calls with thinking on, after the rendered prompt
    reasoning: str
    generations: tuple[int, ...] = (1, 2)
    # What comes between the reasoning (or the prompt, thinking off) and native calls:
    # (thinking on, thinking off)
    before: tuple[str, str] = ("", "")


FAMILIES = [
    FamilyCase("hermes", hermes, "<think>\nThe user wants it.\n</think>\n\n"),
    FamilyCase("qwen3_coder", qwen3_coder, "<think>\nThe user wants it.\n</think>\n\n"),
    FamilyCase("glm47", glm, "<think>The user wants it.</think>"),
    # the template opens reasoning: the output starts inside it
    FamilyCase("deepseek_v4", dsml("｜DSML｜", "tool_calls"), "The user wants it.</think>"),
    FamilyCase(
        "deepseek_v41", dsml("｜DSML｜ ", "calls"), "The user wants it.</think>", generations=(2,)
    ),
    FamilyCase("kimi_k2", kimi_k2, "<think>The user wants it.</think>"),
    # the calls follow the `response` channel: empty after reasoning, closed when the prompt
    # (thinking off) ends inside it
    FamilyCase(
        "kimi_k3",
        kimi_k3,
        "The user wants it.<|close|>think<|sep|>",
        before=("<|open|>response<|sep|><|close|>response<|sep|>", "<|close|>response<|sep|>"),
    ),
    FamilyCase("gemma4", None, "<|channel>thought\nThe user wants it.<channel|>"),
    FamilyCase(
        "muse",
        muse,
        " to=self<|message|>The user wants it.<|eom|><|start|>assistant",
        generations=(2,),
    ),
]
CHOICES = ("required", "named", "parallel_false")
THINKING = (True, False)


@dataclass
class Case:
    grammar: TagGrammar
    family: FamilyCase
    choice: str
    thinking: bool
    prompt: str
    tag: dict[str, Any] | None
    expected: list[Call]
    accept: list[str]
    reject: dict[str, str]
    result: dict[str, Any] = field(default_factory=dict)


def _settings(tool_parser: str, generation: int) -> ParserSettings:
    found = resolve_tool_parser(tool_parser)
    return ParserSettings(
        version=str(generation),  # type: ignore[arg-type]
        tool_parser=found.canonical,
        reasoning_parser=found.family.reasoning_parser,
        family=found.family.key,
    )


def _facts(settings: ParserSettings, choice: str, thinking: bool) -> RequestFacts:
    tc = ToolChoice("named", "get_time") if choice == "named" else ToolChoice("required")
    return facts_for(settings, tc, TOOLS, thinking=thinking)


def native_for(fam: FamilyCase, grammar: TagGrammar) -> bool:
    """Whether the family gets its native calls at this grammar version (docs/sidecar.md):
    Gemma 4 never; XML argument styles from 0.1.32 (Qwen3-Coder, DSML) or 0.1.33 (GLM),
    Kimi K3's from 0.2.7."""
    if fam.write is None:
        return False
    if fam.tool_parser == "kimi_k3":
        return grammar.version >= (0, 2, 7)
    if fam.tool_parser in ("qwen3_coder", "deepseek_v4", "deepseek_v41"):
        return grammar.version >= (0, 1, 32)
    if fam.tool_parser == "glm47":
        return grammar.version >= (0, 1, 33)
    return True


def build_case(grammar: TagGrammar, fam: FamilyCase, choice: str, thinking: bool) -> Case:
    found = resolve_tool_parser(fam.tool_parser)
    template = ChatTemplate.builtin(found.family.key, found.canonical)
    messages = [{"role": "user", "content": "Weather in Paris, and the time?"}]
    prompt = template.render(messages, [dict(t) for t in TOOLS], thinking=thinking)
    named = choice == "named"
    constraint = forced_constraint(
        family=found.family,
        tool_parser=found.canonical,
        tools=TOOLS,
        named="get_time" if named else None,
        parallel=choice != "parallel_false",
        prompt=prompt,
        thinking=thinking,
        choice=ForcedChoice(grammar=grammar),
    )
    expected = {"required": [W, T], "named": [T], "parallel_false": [W]}[choice]
    native = native_for(fam, grammar)
    lead = fam.reasoning if thinking else ""

    def write(calls: list[Call]) -> str:
        if native and fam.write:
            return lead + fam.before[0 if thinking else 1] + fam.write(calls, grammar)
        return lead + guided(calls, named)

    reject = {
        "bare JSON list": lead + _j([{"name": n, "arguments": a} for n, a in expected]),
        "undeclared tool": write([UNDECLARED]),
        "schema broken": write([("get_time", {"zone": "mars"})] if named else [BROKEN]),
    }
    if not native:
        del reject["bare JSON list"]  # the guided array is the accepted form here
    if native and fam.tool_parser == "kimi_k3" and not named and grammar.value_excludes:
        # a string value holding a channel marker: the parser would read it as markup
        marked = {**W[1], "city": "Paris<|open|>response<|sep|>"}
        reject["channel marker in a string"] = write([("get_weather", marked)])
    if choice != "required":
        reject["second call"] = write([*expected, T])
    if named:
        reject["other tool"] = write([W])
    tag = None if constraint.structural_tag is None else dict(constraint.structural_tag)
    if tag is None and constraint.guided_json is not None:
        # guided JSON (no reasoning prefix needed): checked as the one-element tag it equals
        tag = {"type": "structural_tag", "format": json_schema(constraint.guided_json)}
    return Case(grammar, fam, choice, thinking, prompt, tag, expected, [write(expected)], reject)


def _pythons() -> list[str]:
    """The engine venv's Python, and any given in SIDECAR_FORGE_XGRAMMAR_PYTHONS (other
    xgrammar versions, checked the same way; docs/testing.md)."""
    extra = os.environ.get("SIDECAR_FORGE_XGRAMMAR_PYTHONS", "")
    return [str(engine_venv()), *(p for p in extra.split(os.pathsep) if p)]


def _run(python: str, args: list[str], stdin: str = "") -> str:
    done = subprocess.run(
        [python, str(HERE / "xgrammar_check.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def checked() -> dict[tuple[str, str, str, bool], Case]:
    """All cases per xgrammar version, each version's run in one process."""
    out: dict[tuple[str, str, str, bool], Case] = {}
    for python in _pythons():
        version = _run(python, ["--version"]).strip()
        grammar = TagGrammar.parse(version, "xgrammar")
        cases = [build_case(grammar, f, c, t) for f in FAMILIES for c in CHOICES for t in THINKING]
        payload = [{"tag": c.tag, "texts": [*c.accept, *c.reject.values()]} for c in cases]
        results = json.loads(_run(python, [], json.dumps(payload)))["results"]
        for case, result in zip(cases, results, strict=True):
            case.result = result
            out[(version, case.family.tool_parser, case.choice, case.thinking)] = case
        _print_table(cases, version)
    return out


def _print_table(cases: list[Case], version: str) -> None:
    lines = [
        "",
        f"structural tags per family, checked with xgrammar {version} "
        "(compiled; native accepted; rejected of rejection cases)",
        f"{'tool parser':<13}{'choice':<16}{'thinking':<10}{'compiled':<10}{'accepted':<10}"
        f"{'rejected':<10}parsed as the forced calls",
    ]
    for c in cases:
        got = c.result.get("accepted", [])
        acc = sum(got[: len(c.accept)])
        rej = sum(not a for a in got[len(c.accept) :])
        lines.append(
            f"{c.family.tool_parser:<13}{c.choice:<16}{'on' if c.thinking else 'off':<10}"
            f"{'yes' if c.result.get('compiled') else 'NO':<10}"
            f"{acc}/{len(c.accept):<8}{rej}/{len(c.reject):<8}{_parsed(c):<10}"
            f"{'' if native_for(c.family, c.grammar) else '(guided-JSON calls)'}"
        )
    reports = HERE.parents[2] / ".reports"
    reports.mkdir(exist_ok=True)
    # printed in the session's summary (conftest.py)
    (reports / f"structural-tags-{version}.txt").write_text("\n".join(lines) + "\n")


def _parsed(case: Case) -> str:
    """The parser generations that read every accepted text as exactly the forced calls."""
    ok = [
        f"V{g}"
        for g in case.family.generations
        if all(_calls(case, text, g) == case.expected for text in case.accept)
    ]
    return " ".join(ok) or "none"


def _calls(case: Case, text: str, generation: int) -> list[Call]:
    settings = _settings(case.family.tool_parser, generation)
    plan = plan_request(settings, _facts(settings, case.choice, case.thinking), case.prompt)
    message = parse_text(plan, text, "stop")
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


@pytest.mark.parametrize("thinking", THINKING, ids=["thinking_on", "thinking_off"])
@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.parametrize("family", FAMILIES, ids=[f.tool_parser for f in FAMILIES])
def test_tag(
    checked: Mapping[tuple[str, str, str, bool], Case],
    family: FamilyCase,
    choice: str,
    thinking: bool,
) -> None:
    cases = [c for k, c in checked.items() if k[1:] == (family.tool_parser, choice, thinking)]
    assert cases
    for case in cases:
        version = ".".join(map(str, case.grammar.version))
        assert case.tag is not None, "no structural tag was built"
        result = case.result
        assert result["compiled"], (version, result["error"])
        got = result["accepted"]
        assert got[: len(case.accept)] == [True] * len(case.accept), (version, case.tag)
        wrongly = [
            what for what, ok in zip(case.reject, got[len(case.accept) :], strict=True) if ok
        ]
        assert not wrongly, f"xgrammar {version} accepted: {wrongly}"
        for text in case.accept:
            for generation in family.generations:
                assert _calls(case, text, generation) == case.expected, (version, generation)


# -- tool_choice auto with a strict tool ----------------------------------------------------

STRICT_TOOLS = (
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": WEATHER, "strict": True},
    },
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}},
)
# A non-strict tool takes any object (a string value: XML-style families keep undeclared
# parameters as strings)
LOOSE: Call = ("get_time", {"zone": "mars", "extra": "yes"})
# Families whose calls start at a trigger of their own (Muse's tool header also starts its
# reasoning and answers; Gemma 4 has no native tag): docs/sidecar.md
AUTO_FAMILIES = [f for f in FAMILIES if f.tool_parser not in ("muse", "gemma4")]


@dataclass
class AutoCase:
    grammar: TagGrammar
    family: FamilyCase
    thinking: bool
    parallel: bool
    prompt: str
    tag: Mapping[str, Any] | None
    accept: dict[str, tuple[str, list[Call]]]  # what -> (text, the calls it holds)
    reject: dict[str, str]
    result: dict[str, Any] = field(default_factory=dict)


def build_auto_case(
    grammar: TagGrammar, fam: FamilyCase, thinking: bool, parallel: bool
) -> AutoCase:
    found = resolve_tool_parser(fam.tool_parser)
    template = ChatTemplate.builtin(found.family.key, found.canonical)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    prompt = template.render(messages, [dict(t) for t in STRICT_TOOLS], thinking=thinking)
    tag = strict_auto_tag(
        family=found.family,
        tool_parser=found.canonical,
        tools=STRICT_TOOLS,
        parallel=parallel,
        prompt=prompt,
        thinking=thinking,
        choice=ForcedChoice(grammar=grammar),
    )
    lead = fam.reasoning if thinking else ""
    assert fam.write is not None

    def write(calls: list[Call]) -> str:
        assert fam.write is not None
        return lead + "Let me look.\n" + fam.write(calls, grammar)

    accept = {
        "text only": (lead + "It is sunny in Paris.", []),
        "strict call": (write([W]), [W]),
        "loose call": (write([LOOSE]), [LOOSE]),
    }
    reject = {"strict call broken": write([BROKEN]), "undeclared tool": write([UNDECLARED])}
    if parallel:
        accept["two calls"] = (write([W, LOOSE]), [W, LOOSE])
    else:
        reject["second call"] = write([W, LOOSE])
    return AutoCase(grammar, fam, thinking, parallel, prompt, tag, accept, reject)


@pytest.fixture(scope="module")
def auto_checked() -> list[AutoCase]:
    out: list[AutoCase] = []
    for python in _pythons():
        version = _run(python, ["--version"]).strip()
        grammar = TagGrammar.parse(version, "xgrammar")
        built = [
            build_auto_case(grammar, f, t, p)
            for f in AUTO_FAMILIES
            for t in THINKING
            for p in (True, False)
        ]
        out.extend(built)
        cases = [c for c in built if c.tag is not None]
        payload = [
            {"tag": c.tag, "texts": [t for t, _ in c.accept.values()] + list(c.reject.values())}
            for c in cases
        ]
        results = json.loads(_run(python, [], json.dumps(payload)))["results"]
        for case, result in zip(cases, results, strict=True):
            case.result = result
        lines = [
            "",
            f"tool_choice auto with a strict tool, xgrammar {version} (free text or calls; "
            "accepted; rejected)",
            f"{'tool parser':<13}{'parallel':<10}{'thinking':<10}{'compiled':<10}{'accepted':<10}"
            "rejected",
        ]
        for c in cases:
            got = c.result.get("accepted", [])
            n = len(c.accept)
            lines.append(
                f"{c.family.tool_parser:<13}{str(c.parallel).lower():<10}"
                f"{'on' if c.thinking else 'off':<10}"
                f"{'yes' if c.result.get('compiled') else 'NO':<10}"
                f"{sum(got[:n])}/{n:<8}{sum(not a for a in got[n:])}/{len(c.reject)}"
            )
        reports = HERE.parents[2] / ".reports"
        reports.mkdir(exist_ok=True)
        (reports / f"structural-tags-auto-{version}.txt").write_text("\n".join(lines) + "\n")
    return out


def auto_tag_for(fam: FamilyCase, grammar: TagGrammar) -> bool:
    """Whether `auto` with a strict tool gets a tag (docs/sidecar.md): the family's native
    calls, and for XML argument styles a non-strict tool's any-object arguments (0.2.7)."""
    xml = fam.tool_parser in ("qwen3_coder", "glm47", "deepseek_v4", "deepseek_v41")
    return native_for(fam, grammar) and (not xml or grammar.version >= (0, 2, 7))


def _auto_calls(case: AutoCase, text: str, generation: int) -> list[Call]:
    settings = _settings(case.family.tool_parser, generation)
    facts = facts_for(settings, ToolChoice("auto"), STRICT_TOOLS, thinking=case.thinking)
    message = parse_text(plan_request(settings, facts, case.prompt), text, "stop")
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


@pytest.mark.parametrize("family", AUTO_FAMILIES, ids=[f.tool_parser for f in AUTO_FAMILIES])
def test_auto_with_a_strict_tool(auto_checked: list[AutoCase], family: FamilyCase) -> None:
    cases = [c for c in auto_checked if c.family is family]
    assert cases
    for case in cases:
        where = (".".join(map(str, case.grammar.version)), case.thinking, case.parallel)
        if not auto_tag_for(family, case.grammar):
            assert case.tag is None, where
            continue
        assert case.tag is not None, where
        assert case.result["compiled"], (where, case.result["error"])
        got = case.result["accepted"]
        n = len(case.accept)
        assert got[:n] == [True] * n, (where, list(case.accept), got[:n])
        wrongly = [w for w, ok in zip(case.reject, got[n:], strict=True) if ok]
        assert not wrongly, (where, wrongly)
        for text, calls in case.accept.values():
            for generation in family.generations:
                assert _auto_calls(case, text, generation) == calls, (where, generation, text)
