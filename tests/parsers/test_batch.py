"""The whole-output batch path (`parsers.batch`) gives exactly the runner's
message (content, reasoning, calls with ids and arguments, finish reason, route) in both
generations, under every tool_choice, thinking state and prompt: on the samples of every
family, the bench texts, generated prose with quotes, code and markers, and generated calls
(whole, cut off, unusual); and it is taken on the bench texts of the families that declare a
batch grammar."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastpath_check import JSON, SEPS, FastPath, bench_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_check import tool
from parser_samples import Sample, case_id, sample_cases

import parsers.batch
from parsers import parse
from parsers.batch import BatchPath
from parsers.ids import counter_ids
from parsers.plan import ParsePlan
from parsers.types import ParsedMessage

# families with a batch grammar: their bench text must take the path
BATCH_FAMILIES = (
    "hermes",
    "glm47",
    "qwen3_coder",
    "deepseek_v4",
    "kimi_k2",
    "gemma4",
    "kimi_k3",
    "muse",
)
BENCH_FAMILIES = (
    "hermes",
    "qwen3_coder",
    "glm47",
    "deepseek_v4",
    "kimi_k2",
    "gemma4",
    "kimi_k3",
    "muse",
)
FAMILY_KW: dict[str, dict[str, Any]] = {
    "hermes": {"tool_parser": "hermes", "reasoning_parser": "qwen3"},
    "glm47": {"tool_parser": "glm47", "reasoning_parser": "glm45"},
    "qwen3_coder": {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
    "deepseek_v4": {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4"},
    "deepseek_v41": {"tool_parser": "deepseek_v41", "reasoning_parser": "deepseek_v41"},
    "kimi_k2": {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25"},
    "gemma4": {"tool_parser": "gemma4", "reasoning_parser": "gemma4", "thinking": True},
    "kimi_k3": {"tool_parser": "kimi_k3", "reasoning_parser": "kimi_k3"},
    "muse": {"tool_parser": "muse", "reasoning_parser": "muse"},
}
FAST = {name: FastPath(BatchPath, kw) for name, kw in FAMILY_KW.items()}


@pytest.mark.parametrize("case", sample_cases(), ids=case_id)
def test_samples(case: tuple[Sample, int]) -> None:
    sample, gen = case
    FastPath(BatchPath, {}).assert_sample(sample, gen)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each parse took the batch path (its walk gave a result)."""
    seen: list[bool] = []
    real = parsers.batch.parse_batch

    def spy(plan: ParsePlan, text: str, reason: str, ids: Any) -> ParsedMessage | None:
        result = real(plan, text, reason, ids)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(parsers.api, "parse_batch", spy)
    yield seen


@pytest.mark.parametrize("family", BENCH_FAMILIES)
def test_bench_text(family: str, taken: list[bool]) -> None:
    text, kw, units = bench_text(family)
    msg = parse(text, generation=2, id_factory=counter_ids(), **kw)
    assert len(msg.tool_calls) == units
    assert taken == [family in BATCH_FAMILIES]
    FastPath(BatchPath, kw).assert_same_everywhere(text)


def test_sidecar_shares_it(taken: list[bool]) -> None:
    """The sidecar's non-streamed path is the same function."""
    from parsers.api import make_plan
    from sidecar.parsing import parse_whole

    text, kw, units = bench_text("hermes")
    msg = parse_whole(make_plan(generation=2, **kw), text, "stop")
    assert taken == [True] and len(msg.tool_calls) == units and msg.route == "parser_v2"


def test_switched_off_means_runner(taken: list[bool]) -> None:
    text, kw, _ = bench_text("hermes")
    BatchPath.whole_fast = False
    try:
        parse(text, generation=2, **kw)
    finally:
        BatchPath.whole_fast = True
    assert taken == [False]


def test_quoted_and_cut_fall_back(taken: list[bool]) -> None:
    kw = FAMILY_KW["hermes"]
    whole = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    msg = parse(f'Say "{whole}" ok', generation=2, **kw)  # quoted: text, decided here
    assert msg.tool_calls == [] and taken == [True]
    parse(whole[:-5], generation=2, **kw)  # cut off: the runner
    parse('<tool_call>{"name": "f", "arguments": {"a": "\\u00e9"}}</tool_call>', **kw)
    assert taken == [True, False, False]


# Prose pieces: quotes, apostrophes, code spans and fences, blanks, newlines, and markers of
# the marker families (their own and others').
PROSE = [
    "Hi. ",
    "I'm ",
    "users' ",
    " 'x' ",
    "'",
    '"',
    ' "q" ',
    'a"b',
    "`",
    "``",
    "```",
    "`c`",
    "\n",
    " ",
    "\t",
    "é",
    "_",
    "<",
    "</",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<arg_key>",
    "<function=",
    "</parameter>",
    "<\uff5cDSML\uff5ctool_calls>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|channel>thought\n",
    "<|channel>",
    "<channel|>",
    '<|"|>',
]


def _hermes_call(args: Any, seps: tuple[str, str], name: str, tail: str) -> str:
    body = json.dumps(args, separators=seps, ensure_ascii=False, allow_nan=True)
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {body}{tail}'


HERMES_CALLS = st.builds(
    _hermes_call,
    JSON.filter(lambda v: isinstance(v, dict)) | st.just({"city": "Zürich", "days": 2}),
    SEPS,
    st.sampled_from(["get_weather", "f", "", 'a"b']),
    st.sampled_from(["}\n</tool_call>", "}</tool_call>", "} </tool_call", "}"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PROSE) | HERMES_CALLS, max_size=14))
def test_generated_hermes(pieces: list[str]) -> None:
    FAST["hermes"].assert_same_everywhere("".join(pieces))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PROSE), max_size=20), st.sampled_from(list(FAMILY_KW)))
def test_generated_prose(pieces: list[str], family: str) -> None:
    """The quote/code shortcut (`batch._prose`) against the tracker: prose and markers only."""
    FAST[family].assert_same_everywhere("".join(pieces))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from("ab1 _é\"'`\n"), max_size=24), st.booleans())
def test_quote_shapes_before_a_call(prose: str, think: bool) -> None:
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    text = (f"<think>{prose}</think>" if think else "") + f"{prose}{call}{prose}{call}"
    FAST["hermes"].assert_same_everywhere(text)


@pytest.mark.parametrize("reason", ["length", "stop", "content_filter"])
def test_finish_reasons(reason: str) -> None:
    text, kw, _ = bench_text("hermes", units=2)
    for cut in (text, text[: len(text) // 2]):
        fast, slow = FAST["hermes"].both(cut, {**kw, "generation": 2, "finish_reason": reason})
        assert fast == slow


def _bench_calls(family: str) -> st.SearchStrategy[str]:
    """The bench's call blocks of `family` (schema-less), whole or cut anywhere."""
    import bench_parsers

    maker = {
        "glm47": bench_parsers._glm,
        "qwen3_coder": bench_parsers._coder,
        "deepseek_v4": bench_parsers._dsml,
        "deepseek_v41": bench_parsers._dsml,
        "kimi_k2": bench_parsers._kimi_k2,
        "gemma4": bench_parsers._gemma4,
    }[family]
    whole = st.integers(0, 9).map(maker)
    return whole | st.tuples(whole, st.integers(0, 400)).map(lambda c: c[0][: c[1]])


@pytest.mark.parametrize(
    "family", ["glm47", "qwen3_coder", "deepseek_v4", "deepseek_v41", "kimi_k2", "gemma4"]
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_scanned_regions(family: str, data: st.DataObject) -> None:
    pieces = data.draw(st.lists(st.sampled_from(PROSE) | _bench_calls(family), max_size=8))
    FAST[family].assert_same_everywhere("".join(pieces))


GLM_LAYOUT = st.sampled_from(["", "\n", " ", "\\n", "\n\\n ", "x"])
# fmt: off
GLM_VALUES = [
    "", " ", "1", " 2 ", '{"a": 1}', "[1, 2]", "null", "a & b", "&amp;", '"q"', "Zürich",
    "\n x \n", "true", "1e999", '[{\\"id\\": 1}]', "rust, go", "<b>", " \n", "\r\n\n",
    '\t{"a": 1} ', "\n[1]\n", " x", "a\\n", "a</arg_key>b", "<arg_key>",
]
# fmt: on
GLM_VALUE = st.sampled_from(GLM_VALUES)
GLM_TOOLS = [tool("f", a="string", n="integer", l="array", o={"type": ["object", "null"]})]


@st.composite
def glm_calls(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["f", " f ", "f\\n", "", "a<b"]))
    out = f"<tool_call>{name}{draw(GLM_LAYOUT)}"
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["a", "n", "l", "o", " a ", "k"]))
        out += f"<arg_key>{key}</arg_key>{draw(GLM_LAYOUT)}<arg_value>{draw(GLM_VALUE)}"
        out += draw(st.sampled_from(["</arg_value>", "</arg_value>\n", ""])) + draw(GLM_LAYOUT)
    return out + draw(st.sampled_from(["</tool_call>", "</tool_call>\n", ""]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(glm_calls() | st.sampled_from(PROSE), min_size=1, max_size=4))
def test_generated_glm(pieces: list[str]) -> None:
    text = "".join(pieces)
    FAST["glm47"].assert_same_everywhere(text)
    FAST["glm47"].assert_same_everywhere(text, {**FAMILY_KW["glm47"], "tools": GLM_TOOLS})


@pytest.mark.parametrize("prompt", ["<|channel>thought", "<|channel>", "<|channel>thought\nx"])
def test_gemma4_prefilled_channel(prompt: str, taken: list[bool]) -> None:
    """A prefilled channel label (the runner's PrefillLabel filter): left to the runner."""
    text, _, _ = bench_text("gemma4", units=2)
    FAST["gemma4"].assert_same_everywhere("\n" + text, {**FAMILY_KW["gemma4"], "prompt": prompt})


Q = '<|"|>'
# fmt: off
GEMMA_VALUES = [
    f"{Q}x{Q}", f"{Q}{Q}", f'{Q}a "b" \\ é\n<{Q}', f"{Q}<tool_call|>{Q}", "1", "-0", "2.50",
    "1e5", "01", "+1", "1.", "true", "TRUE", "false", "null", "None", "nil", "word", " 3 ",
    "", f"[{Q}C{Q},{Q}F{Q}]", "[1,2]", "[]", "[1,]", "[ 1]", "{a:1}", f"{Q}x", "[[1]]",
    f'{Q}say "hi"{Q}', f"{Q},k:1,{{a:{Q}", f"{Q}x<|{Q}", f'[{Q}"a"{Q},1,{Q}b:c{Q}]', f"{Q}\t{Q}",
    f'{Q}"{Q}', f"{Q}<|{Q}", f"{Q}|>{Q}",
]
# fmt: on
GEMMA_VALUE = st.sampled_from(GEMMA_VALUES)


@st.composite
def gemma_calls(draw: st.DrawFn) -> str:
    """Mostly the shape the whole-call reader takes (so its output is compared), sometimes
    one that leaves the call to the scanner."""
    odd = draw(st.integers(0, 3)) == 0
    name = draw(st.sampled_from(["a b", "", "f"] if odd else ["get_weather", "f"]))
    keys = ["city", "days", " k", f"{Q}k{Q}", "a.b"] if odd else ["city", "days", "a.b", "_"]
    pairs = [
        draw(st.sampled_from(keys)) + ":" + draw(GEMMA_VALUE)
        for _ in range(draw(st.integers(0, 3)))
    ]
    sep = draw(st.sampled_from([",", ", "] if odd else [","]))
    tails = ["},}<tool_call|>", "} <tool_call|>", "}<turn|>", "}", ",}<tool_call|>"]
    tail = draw(st.sampled_from(tails if odd else ["}<tool_call|>", "}<tool_call|>\n"]))
    return f"<|tool_call>call:{name}{{{sep.join(pairs)}{tail}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gemma_calls() | st.sampled_from(PROSE), min_size=1, max_size=4))
def test_generated_gemma4(pieces: list[str]) -> None:
    FAST["gemma4"].assert_same_everywhere("".join(pieces))


@pytest.mark.parametrize(
    ("family", "module", "reader"),
    [
        ("glm47", "glm", "_plain_call"),
        ("gemma4", "gemma4", "_plain_call"),
        ("kimi_k2", "kimi_k2", "_whole_section"),
        ("deepseek_v4", "dsml", "_plain_invoke"),
        ("qwen3_coder", "qwen3_coder", "_plain_function"),
    ],
)
def test_whole_reader_taken(
    family: str, module: str, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The family's whole-call reader (not the scanner) reads every bench call."""
    import importlib

    mod = importlib.import_module(f"parsers.families.{module}")
    seen: list[bool] = []
    real = getattr(mod, reader)

    def spy(*args: Any) -> Any:
        result = real(*args)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(mod, reader, spy)
    text, kw, units = bench_text(family)
    assert len(parse(text, generation=2, **kw).tool_calls) == units
    assert seen == [True] * units


@pytest.mark.parametrize("value", GEMMA_VALUES)
def test_gemma4_each_value(value: str) -> None:
    """Every value shape in a call the reader would take but for it (deterministic)."""
    FAST["gemma4"].assert_same_everywhere(
        f"<|tool_call>call:get_weather{{city:{value},days:1}}<tool_call|>"
    )


@pytest.mark.parametrize("value", GLM_VALUES)
def test_glm_each_value(value: str) -> None:
    for key in ("a", "n", "l", "o", "k"):
        text = (
            f"<tool_call>f\n<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n</tool_call>"
        )
        for tools in (None, GLM_TOOLS):
            FAST["glm47"].assert_same_everywhere(text, {**FAMILY_KW["glm47"], "tools": tools})
    pair = f"<arg_key>a</arg_key><arg_value>{value}</arg_value>"
    FAST["glm47"].assert_same_everywhere(f"<tool_call>f{pair}{pair}</tool_call>")  # repeated


@st.composite
def kimi_sections(draw: st.DrawFn) -> str:
    """Kimi K2 sections, mostly in the shape the section reader takes."""
    odd = draw(st.integers(0, 3)) == 0
    out = draw(st.sampled_from(["<|tool_calls_section_begin|>", "<|tool_call_section_begin|>"]))
    for _ in range(draw(st.integers(0 if odd else 1, 3))):
        head = draw(
            st.sampled_from(
                ["functions.f:0", "functions.get_weather:1", "functions.f:0", "f:2", "a.b:c:3"]
                + (["0", " functions.f:1 ", "functions.:0", "x<y:1"] if odd else [])
            )
        )
        args = json.dumps(
            draw(JSON.filter(lambda v: isinstance(v, dict))),
            separators=draw(SEPS),
            ensure_ascii=draw(st.booleans()),
            allow_nan=True,
        )
        if odd and draw(st.booleans()):
            args = args.replace("/", "\\/")
        out += draw(st.sampled_from(["\n", "", " "] + (["x"] if odd else [])))
        out += f"<|tool_call_begin|>{head}<|tool_call_argument_begin|>"
        out += draw(st.sampled_from(["", " "])) + args + "<|tool_call_end|>"
    ends = [
        "<|tool_calls_section_end|>",
        "<|tool_call_section_end|>",
        "\n<|tool_calls_section_end|>",
    ]
    return out + draw(st.sampled_from(ends + (["", "<|tool_call_end|>"] if odd else [])))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(kimi_sections() | st.sampled_from(PROSE), min_size=1, max_size=4))
def test_generated_kimi_k2(pieces: list[str]) -> None:
    FAST["kimi_k2"].assert_same_everywhere("".join(pieces))


@pytest.mark.parametrize(
    "args",
    ['{"a": "x\\"y"}', '{"a": "x\\/y"}', '{"a": "\\u00e9"}', '{"a": "\\u001f"}', '{"a": "\\u001F"}',
     '{"a": "\\u000a"}', '{"a": "\\n\\\\"}', '{"a" : 1}', '{"a": NaN}', '[1]', '{"a": 1} x'],
)  # fmt: skip
def test_kimi_k2_argument_shapes(args: str) -> None:
    for head in ("functions.f:0", "functions.f:0<|tool_call_end|><|tool_call_begin|>functions.f:0"):
        sep = "<|tool_call_argument_begin|>"
        text = f"<|tool_calls_section_begin|><|tool_call_begin|>{head}{sep}{args}<|tool_call_end|>"
        FAST["kimi_k2"].assert_same_everywhere(text + "<|tool_calls_section_end|>")


CODER_TOOLS = [tool("f", a="string", n="integer", s={"type": ["string", "null"]}, o="object")]
# fmt: off
CODER_VALUES = [
    "x", "\nx\n", "\n\nx\n\n", "", "null", "None", "42", "42.0", "{'k': 'v'}", '{"k": 1}',
    "a</parameter>b", "a\n<parameter=n>\n1\n</parameter>\nb", "</parameter", "é & <b>",
    "a</function>", "<tool_call>x</tool_call>", "NULL", "\nNONE\n", "\n", "nul", "a<function=g>",
    " 7 ", "true",
]
# fmt: on


@st.composite
def coder_calls(draw: st.DrawFn) -> str:
    odd = draw(st.integers(0, 3)) == 0
    out = "<tool_call>" + draw(st.sampled_from(["\n", "", " "]))
    for _ in range(draw(st.integers(1, 2))):
        out += f"<function={draw(st.sampled_from(['f', 'g', ' f ', 'a b'] if odd else ['f']))}>\n"
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["a", "n", "s", "o", "k"]))
            close = draw(
                st.sampled_from(["</parameter>", "", "</parameter1>"] if odd else ["</parameter>"])
            )
            out += f"<parameter={key}>{draw(st.sampled_from(CODER_VALUES))}{close}\n"
        out += draw(
            st.sampled_from(["</function>\n", "", "</function>x"] if odd else ["</function>\n"])
        )
    return out + draw(st.sampled_from(["</tool_call>", "", " \n"] if odd else ["</tool_call>"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(coder_calls() | st.sampled_from(PROSE), min_size=1, max_size=3))
def test_generated_qwen3_coder(pieces: list[str]) -> None:
    text = "".join(pieces)
    FAST["qwen3_coder"].assert_same_everywhere(text)
    kw = {**FAMILY_KW["qwen3_coder"], "tools": CODER_TOOLS}
    FAST["qwen3_coder"].assert_same_everywhere(text, kw)


# blocks next to the one-regex reader's shape (`qwen3_coder._plain_function`): repeated and
# undeclared keys, names with blanks or braces, blanks in keys, several functions
CODER_NEAR_PLAIN = [
    "<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>",
    "<function=f>\n<parameter=k>\n1\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>",
    "<function=f>\n<parameter=n>\n1\n</parameter>\n<parameter=k>\n2\n</parameter>\n</function>",
    "<function= f >\n<parameter= n >\n1\n</parameter>\n</function>",
    "<function=f\u00a0>\n<parameter=n>1</parameter>\n</function>",
    "<function={{f}}>\n<parameter=n>1</parameter>\n</function>",
    "<function=f></function><function=g><parameter=x>y</parameter></function>",
    "<function=f>\n<parameter=s>None</parameter>\n<parameter=o>{'k': 1}</parameter></function>",
    "<function=f>"
    + "".join(f"<parameter=x{i}>{i}</parameter>\n" for i in range(6))
    + "</function>",
    "<function=f>"
    + "".join(f"<parameter=y{i}>\n{i}\n</parameter>" for i in range(11))
    + "</function>",
]


@pytest.mark.parametrize("block", CODER_NEAR_PLAIN)
def test_qwen3_coder_near_plain(block: str) -> None:
    for tools in (None, CODER_TOOLS):
        for text in (f"<tool_call>\n{block}\n</tool_call>", f"<tool_call>{block}x"):
            kw = {**FAMILY_KW["qwen3_coder"], "tools": tools}
            FAST["qwen3_coder"].assert_same_everywhere(text, kw)


@pytest.mark.parametrize("value", CODER_VALUES)
def test_qwen3_coder_each_value(value: str) -> None:
    for key in ("a", "n", "s", "o", "k"):
        call = f"<function=f>\n<parameter={key}>{value}</parameter>\n</function>"
        text = f"<tool_call>\n{call}\n</tool_call>"
        kw = {**FAMILY_KW["qwen3_coder"], "tools": CODER_TOOLS}
        FAST["qwen3_coder"].assert_same_everywhere(text, kw)


DSML_TOOLS = [tool("f", a="string", n="integer")]
# fmt: off
DSML_VALUES = [
    "x", " x ", "", "1", " 2 ", '{"k": 1}', "[1, 2]", "null", "1e999", "NaN", "é & <b>",
    '"q"', "\n", "a<｜DSML｜parameter b",
]
# fmt: on


@st.composite
def dsml_blocks(draw: st.DrawFn) -> str:
    odd = draw(st.integers(0, 3)) == 0
    sep = draw(st.sampled_from(["", " "]))  # V4 / V4.1 spelling (the parser picks its own)
    t = f"<{BAR}DSML{BAR}{sep}"
    c = f"</{BAR}DSML{BAR}{sep}"
    block = draw(st.sampled_from(["tool_calls", "calls"]))
    out = f"{t}{block}>\n"
    for _ in range(draw(st.integers(0 if odd else 1, 2))):
        out += f'{t}invoke name="{draw(st.sampled_from(["f", "g"]))}">\n'
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["a", "n", "k"] + (["arguments"] if odd else [])))
            string = draw(st.sampled_from([' string="true"', ' string="false"', ""]))
            close = draw(st.sampled_from([f"{c}parameter>", ""] if odd else [f"{c}parameter>"]))
            out += (
                f'{t}parameter name="{key}"{string}>{draw(st.sampled_from(DSML_VALUES))}{close}\n'
            )
        if odd and draw(st.booleans()):
            out += '{"a": 1}'
        out += draw(st.sampled_from([f"{c}invoke>\n", ""] if odd else [f"{c}invoke>\n"]))
    return out + draw(st.sampled_from([f"{c}{block}>", ""] if odd else [f"{c}{block}>"]))


BAR = "\uff5c"


@pytest.mark.parametrize("family", ["deepseek_v4", "deepseek_v41"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_dsml(family: str, data: st.DataObject) -> None:
    text = "".join(
        data.draw(st.lists(dsml_blocks() | st.sampled_from(PROSE), min_size=1, max_size=3))
    )
    FAST[family].assert_same_everywhere(text)
    FAST[family].assert_same_everywhere(text, {**FAMILY_KW[family], "tools": DSML_TOOLS})


@pytest.mark.parametrize("value", DSML_VALUES)
def test_dsml_each_value(value: str) -> None:
    t, c = f"<{BAR}DSML{BAR}", f"</{BAR}DSML{BAR}"
    for key in ("a", "n", "k"):
        for string in ("true", "false"):
            param = f'{t}parameter name="{key}" string="{string}">{value}{c}parameter>'
            text = f'{t}tool_calls>\n{t}invoke name="f">\n{param}\n{c}invoke>\n{c}tool_calls>'
            kw = {**FAMILY_KW["deepseek_v4"], "tools": DSML_TOOLS}
            FAST["deepseek_v4"].assert_same_everywhere(text, kw)


# invokes next to the one-regex reader's shape (`dsml._plain_invoke`): repeated keys, a
# wrapper first, V4.1 and mixed spellings, an empty invoke, tag heads in values, odd attributes
DSML_NEAR_PLAIN = [
    '<P name="a" string="true">1</Q><P name="a" string="false">2</Q>',
    '<P name="arguments" string="false">{"a": "x", "n": 2}</Q>',
    '<P name="n" string="false">2</Q><P name="arguments" string="false">{"a": 1}</Q>',
    '<P name="a">x<｜DSML｜invoke</Q>',
    '<P name="a" string="TRUE"> 1 </Q>',
    '<P name="a" string="true" >1</Q>',
    '<P name="" string="true">1</Q>',
    '<P name="n" string="false">\n 3\t</Q><P name="k">[1, "a"]</Q>',
    "",
]


@pytest.mark.parametrize("params", DSML_NEAR_PLAIN)
@pytest.mark.parametrize("family", ["deepseek_v4", "deepseek_v41"])
def test_dsml_near_plain(params: str, family: str) -> None:
    for sep in ("", " "):
        t, c = f"<{BAR}DSML{BAR}{sep}", f"</{BAR}DSML{BAR}{sep}"
        body = params.replace("<P", f"{t}parameter").replace("</Q>", f"{c}parameter>")
        for block in ("tool_calls", "calls"):
            invoke = f'{t}invoke name="f">\n{body}\n{c}invoke>'
            text = f"{t}{block}>\n{invoke}\n{invoke}{c}{block}>"
            for tools in (None, [*DSML_TOOLS, tool("g", a="string")]):
                FAST[family].assert_same_everywhere(text, {**FAMILY_KW[family], "tools": tools})


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans(), st.booleans())
def test_kimi_k2_strings_canonical(value: Any, ascii_only: bool, slashes: bool) -> None:
    """`_strings_canonical` (one regex substitution) against its definition: every escaped
    string literal re-dumps to itself."""
    import re

    from parsers.families.kimi_k2 import _strings_canonical

    text = json.dumps(value, ensure_ascii=ascii_only)
    if slashes:
        text = text.replace("/", "\\/")
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"', text, re.S)
    expected = all(
        "\\" not in t or json.dumps(json.loads(t), ensure_ascii=False) == t for t in tokens
    )
    assert _strings_canonical(text) == expected


# --- Kimi K3 (a channel family: its own whole-output reader, `kimi_k3.batch_message`)

K3_TOOLS = [tool("get_weather", city="string", days="integer"), tool("f", a="string")]


def _k3(name: str, body: str, head: str = "") -> str:
    return f"<|open|>{name}{head}<|sep|>{body}<|close|>{name}<|sep|>"


# fmt: off
K3_VALUES = [
    "x", "", " ", "City 0 Zürich", "42", " 42 ", "-0", "007", "1e3", "3.50", "true", "null",
    '{"a": [1, 2]}', "[1,", '"s"', "a\nb\t\"q\\", "\x01", "<b>&amp;</b>", "é & <x",
    "Use `<|open|>` tags", "a<|close|>b", "<|end_of_msg|>", "<|open|>argument<|sep|>",
    "99999999999999999999", "NaN",
]
K3_TYPES = [None, "string", "number", "integer", "boolean", "object", " Number ", "", "str&amp;"]
# fmt: on
K3_HEADS = [
    ' tool="get_weather" index="1"',
    ' tool="f" index="2"',
    ' tool="f"',
    ' tool="f" index="x"',
    ' tool="f" index="1"',
    ' tool="a&amp;b" index="3"',
    ' tool=""',
    ' tool=" "',
    ' index="1" tool="f"',
    ' tool="f"  index="1"',
    " tool=f",
    "",
]


@st.composite
def k3_calls(draw: st.DrawFn) -> str:
    """One call channel: mostly the shape the reader takes, some not (blanks inside markers,
    other attribute orders, a second argument style, strays, missing closes)."""
    odd = draw(st.integers(0, 5)) == 0
    head = draw(st.sampled_from(K3_HEADS[:6] + (K3_HEADS[6:] if odd else [])))
    body = ""
    if draw(st.integers(0, 4)) == 0:
        body += _k3("json", draw(st.sampled_from(['{"a": 1}', ' {"a" : "x"} ', "", " ", "[1"])))
    else:
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["city", "days", "a", "note", "", "k&quot;"]))
            kind = draw(st.sampled_from(K3_TYPES))
            attrs = f' key="{key}"' + ("" if kind is None else f' type="{kind}"')
            if odd and draw(st.booleans()):
                attrs = draw(st.sampled_from([f' type="x" key="{key}"', attrs + " ", " key=a"]))
            body += draw(st.sampled_from(["", "\n", " "]))
            body += _k3("argument", draw(st.sampled_from(K3_VALUES)), attrs)
    if odd:
        body += draw(
            st.sampled_from(
                [_k3("json", "{}"), "<|close|>argument<|sep|>", "text", "<|open|>think<|sep|>"]
            )
        )
    out = _k3("call", body + draw(st.sampled_from(["", "\n"])), head)
    if odd and draw(st.booleans()):
        out = out.removesuffix("<|close|>call<|sep|>")
    if odd and draw(st.booleans()):
        out = out.replace("<|close|>argument<|sep|>", "<|close|> argument <|sep|>", 1)
    return out


@st.composite
def k3_outputs(draw: st.DrawFn) -> str:
    """Whole Kimi K3 outputs: think, response, tools channels and bare calls with blanks
    between, stray and unknown markers, message ends, text after them; cut anywhere."""
    prose = st.lists(
        st.sampled_from(["Hi. ", "I'm ", '"q" ', "`", "`<|open|>tools<|sep|>`", "\n", " ",
                         "<|open|>", "<|open|>x<|sep|>", "<|close|>", "é", "<|sep|>"]),
        max_size=5,
    ).map("".join)  # fmt: skip
    pieces = []
    for _ in range(draw(st.integers(1, 5))):
        choice = draw(st.integers(0, 11))
        if choice == 0:
            pieces.append(_k3("think", draw(prose)))
        elif choice == 1:
            pieces.append(_k3("response", draw(prose)))
        elif choice in (2, 3, 10, 11):
            calls = draw(st.lists(k3_calls(), max_size=3))
            sep = draw(st.sampled_from(["", "\n", " \n  "]))
            pieces.append(_k3("tools", sep + sep.join(calls) + sep))
        elif choice == 4:
            pieces.append(draw(k3_calls()))
        elif choice == 5:
            pieces.append(draw(st.sampled_from(["\n", " ", "\t\r\n"])))
        elif choice == 6:
            pieces.append(draw(st.sampled_from(
                ["<|close|>message<|sep|>", "<|end_of_msg|>", "<|close|>message<|sep|>tail",
                 "<|close|>think<|sep|>", "<|open|>message<|sep|>", "<|open|>think<|sep|>",
                 "<|open|>response<|sep|>", "<|close|>tools<|sep|>", "<|open|>nope<|sep|>",
                 "<|open|> response <|sep|>", "<|open|>tools<|sep|>", "<|open|>response"]
            )))  # fmt: skip
        elif choice == 7 and draw(st.booleans()):
            pieces.append(draw(prose))
        else:
            pieces.append(_k3("think", draw(prose)) + _k3("response", draw(prose)))
    return _sometimes_cut(draw, "".join(pieces))


def _sometimes_cut(draw: st.DrawFn, text: str) -> str:
    """`text`, or (one in five) `text` cut anywhere (the end of output mid-way)."""
    if draw(st.integers(0, 4)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


@pytest.mark.parametrize("value", K3_VALUES)
def test_kimi_k3_each_value(value: str) -> None:
    """Every value under every type attribute, declared string or not (`city` is declared
    a string, `days` an integer, `note` not at all)."""
    for key in ("city", "days", "note"):
        for kind in K3_TYPES:
            attrs = f' key="{key}"' + ("" if kind is None else f' type="{kind}"')
            call = _k3("call", _k3("argument", value, attrs), ' tool="get_weather" index="1"')
            text = _k3("response", "ok") + _k3("tools", call) + "<|end_of_msg|>"
            kw = {**FAMILY_KW["kimi_k3"], "tools": K3_TOOLS}
            FAST["kimi_k3"].assert_same_everywhere(text, kw)


def test_kimi_k3_bench_cuts() -> None:
    """The bench text cut at every marker edge and inside each value: never repaired."""
    text, kw, _ = bench_text("kimi_k3", units=2)
    cuts = {m.start() for m in re.finditer(r"<\|", text)}
    cuts |= {m.end() for m in re.finditer(r"\|>", text)}
    cuts |= {i + 3 for i in list(cuts)}
    for cut in sorted(cuts):
        for prompt in ({}, {"prompt": "<|open|>think<|sep|>"}):
            fast, slow = FAST["kimi_k3"].both(text[:cut], {**kw, **prompt, "generation": 2})
            assert fast == slow, cut


def test_kimi_k3_reader_decides(taken: list[bool]) -> None:
    """Taken on the common shapes (ids from `index`, made unique; a json channel's bytes
    kept), and the runner's for a cut call and a stray marker."""
    call = _k3("call", _k3("json", '{"a" : 1}'), ' tool="f" index="1"')
    text = _k3("think", "t") + "\n" + _k3("response", "Use `<|open|>` x") + _k3("tools", call * 2)
    msg = parse(text + "<|end_of_msg|>dropped", generation=2, id_factory=counter_ids(),
                **FAMILY_KW["kimi_k3"])  # fmt: skip
    assert [(c.id, c.arguments) for c in msg.tool_calls] == [
        ("f:0", '{"a" : 1}'),
        ("f:1", '{"a" : 1}'),
    ]
    assert (msg.content, msg.reasoning_content) == ("Use `<|open|>` x", "t")
    parse(text[:-30], generation=2, **FAMILY_KW["kimi_k3"])
    parse(text.replace("x<|close|>", "x<|open|>think<|sep|><|close|>"), **FAMILY_KW["kimi_k3"])
    assert taken == [True, False, False]


# --- Muse (a channel family: its own whole-output reader, `muse.batch_message`)

MUSE_TOOLS = [tool("get_weather", city="string", days="integer"), tool("f", a="string")]
# fmt: off
MUSE_VALUES = [
    "x", "", " ", "\n", "City 0 Zürich", "42", " 42 ", "-0", "007", "1e3", "3.50", "true",
    "null", "nul", '{"a": [1, 2]}', "[1,", '"s"', ' "s" ', "a\nb\t\"q\\", "\x01",
    "<b>&amp;</b>", "é & <x", "<atem:parameter name=\"k\">", "</atem:invoke>", "t", "-",
    "99999999999999999999", "NaN", "\u00a0x",
]
# fmt: on
MUSE_HEADS = [
    "<|start|>assistant to=self<|message|>",
    "<|start|>assistant to=user<|message|>",
    "<|start|>assistant to=get_weather<|message|>",
    "<|start|>assistant to=f<|message|>",
    "\n<|start|>assistant to=get_weather.get_weather<|message|>",
    "<|start|>assistant<|message|>",
    "<|start|>assistant  to=user <|message|>",
    "<|start|>assistant to=functions.f<|message|>",
    "<|start|>assistant to=x",
    "<|start|>user<|start|>",
    " to=self<|message|>",
    "to=get_weather<|message|>",
    "<|message|>",
]


@st.composite
def atem_bodies(draw: st.DrawFn) -> str:
    """A tool body: invokes in the common shape, some not (text between tags, a blank or
    quoted name, malformed parameters, missing closes)."""
    odd = draw(st.integers(0, 5)) == 0
    out = draw(st.sampled_from(["<atem:function_calls>\n", "", "\n"]))
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "f", "get_weather.get_weather", "g"]))
        if odd:
            name = draw(st.sampled_from([name, "", " ", "a>b"]))
        out += f'<atem:invoke name="{name}">' + draw(st.sampled_from(["\n", "", " "]))
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["city", "days", "a", "note", ""]))
            tag = f'<atem:parameter name="{key}">'
            if draw(st.integers(0, 5)) == 0:
                tag = draw(st.sampled_from([f"<atem:parameter name='{key}'>",
                                            f'<atem:parameter  name = "{key}" >']))  # fmt: skip
            out += tag + draw(st.sampled_from(MUSE_VALUES)) + "</atem:parameter>"
            out += draw(st.sampled_from(["\n", ""]))
        if odd:
            out += draw(st.sampled_from(["text", "<atem:parameter>", "<x>", ""]))
        out += "</atem:invoke>" if not (odd and draw(st.booleans())) else ""
        out += draw(st.sampled_from(["\n", ""]))
    return out + draw(st.sampled_from(["</atem:function_calls>", "", "</atem:function_calls>\n"]))


@st.composite
def muse_outputs(draw: st.DrawFn) -> str:
    """Whole Muse outputs: messages of every recipient with prose (quotes, code, quoted
    header markers) or ATEM bodies, blanks or text between them, end markers or none; cut
    anywhere."""
    prose = st.lists(
        st.sampled_from(["Hi. ", "I'm ", '"q" ', "`", "`<|start|>`", "\n", " ", "é",
                         "<|start|>", '"<|start|>assistant to=f<|message|>"', "<", "to=x "]),
        max_size=5,
    ).map("".join)  # fmt: skip
    out = ""
    for i in range(draw(st.integers(1, 5))):
        head = draw(st.sampled_from(MUSE_HEADS[:5] if draw(st.integers(0, 4)) else MUSE_HEADS))
        if i == 0 and draw(st.booleans()):
            head = draw(st.sampled_from([" to=self<|message|>", " to=get_weather<|message|>"]))
        body = draw(atem_bodies()) if "to=get" in head or "to=f" in head else draw(prose)
        end = draw(st.sampled_from(["<|eom|>", "<|eom|>", "<|eot|>", "<|eom|>\n", ""]))
        out += head + body + end
        if draw(st.integers(0, 6)) == 0:
            out += draw(st.sampled_from(["text", "\n\n", "<|eom|>", "<|message|>"]))
    return _sometimes_cut(draw, out)


CHANNEL_OUTPUTS = {"kimi_k3": (k3_outputs, K3_TOOLS), "muse": (muse_outputs, MUSE_TOOLS)}


@pytest.mark.parametrize("family", list(CHANNEL_OUTPUTS))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tools=st.booleans())
def test_generated_channel_outputs(family: str, data: st.DataObject, tools: bool) -> None:
    outputs, declared = CHANNEL_OUTPUTS[family]
    text = data.draw(outputs())
    kw = {**FAMILY_KW[family], **({"tools": declared} if tools else {})}
    FAST[family].assert_same_everywhere(text, kw)


@pytest.mark.parametrize("value", MUSE_VALUES)
def test_muse_each_value(value: str) -> None:
    """Every value, declared a string (`city`), an integer (`days`) or not at all (`note`),
    with and without tools declared."""
    for key in ("city", "days", "note"):
        param = f'<atem:parameter name="{key}">{value}</atem:parameter>'
        body = f'<atem:function_calls>\n<atem:invoke name="get_weather">\n{param}\n'
        text = f"<|start|>assistant to=get_weather<|message|>{body}</atem:invoke><|eom|>"
        for tools in ({}, {"tools": MUSE_TOOLS}):
            FAST["muse"].assert_same_everywhere(text, {**FAMILY_KW["muse"], **tools})


def test_muse_bench_cuts() -> None:
    """The bench text cut at every marker and tag edge: never repaired."""
    text, kw, _ = bench_text("muse", units=2)
    cuts = {m.start() for m in re.finditer(r"<", text)} | {m.end() for m in re.finditer(">", text)}
    cuts |= {i + 3 for i in list(cuts)}
    for cut in sorted(cuts):
        for tools in ({}, {"tools": MUSE_TOOLS}):
            fast, slow = FAST["muse"].both(text[:cut], {**kw, **tools, "generation": 2})
            assert fast == slow, cut


def test_muse_reader_decides(taken: list[bool]) -> None:
    """Taken on the common shapes (a quoted header marker in content is text; a doubled
    namespace is the declared tool), the runner's for a header that ends a body without its
    end marker and for a cut invoke."""
    call = '<atem:invoke name="f.f"><atem:parameter name="a">1</atem:parameter></atem:invoke>'
    text = (
        " to=self<|message|>t<|eom|>\n<|start|>assistant to=user<|message|>Use `<|start|>`.<|eom|>"
        f"<|start|>assistant to=f.f<|message|>{call}<|eom|>"
    )
    msg = parse(text, generation=2, id_factory=counter_ids(), tools=MUSE_TOOLS,
                **FAMILY_KW["muse"])  # fmt: skip
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("f", '{"a":"1"}')]
    assert (msg.content, msg.reasoning_content) == ("Use `<|start|>`.", "t")
    parse(text.replace("t<|eom|>", "t"), generation=2, **FAMILY_KW["muse"])
    parse(text[:-30], generation=2, **FAMILY_KW["muse"])
    assert taken == [True, False, False]


@pytest.mark.parametrize("quote", ["`", '"', "'", "``", "```\n"])
@pytest.mark.parametrize("count", [1, 9, 12])
def test_muse_many_quoted_headers(quote: str, count: int) -> None:
    """Quoted header markers past the shortcut's recheck bound (the tracker takes over), in
    every quote style, then an unquoted one or none."""
    close = quote.rstrip("\n")
    quoted = f"see {quote}<|start|>{close} and "
    for tail in ("", "<|start|>assistant to=user<|message|>x"):
        text = f"<|start|>assistant to=user<|message|>{quoted * count}{tail}<|eom|>"
        FAST["muse"].assert_same_everywhere(text)


@pytest.mark.parametrize("length", [1, 243, 244, 300])
def test_muse_header_length(length: int) -> None:
    """Headers up to `_MAX_HEADER` characters and past it (then text), `<|start|>` or bare."""
    name = "f" * length
    for head in (f"<|start|>assistant to={name}", f" to={name}", f"<|start|>assistant {name}"):
        call = '<atem:invoke name="f"></atem:invoke>'
        text = f"{head}<|message|>{call}<|eom|><|start|>assistant to=user<|message|>y<|eom|>"
        FAST["muse"].assert_same_everywhere(text, {**FAMILY_KW["muse"], "tools": MUSE_TOOLS})
