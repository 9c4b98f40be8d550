"""Conformance: Kimi K2 / K2.5 (`kimi_k2`, reasoning `kimi_k25`), cases ported from other
implementations' test suites.

Sources (cited per test):
- vLLM tests/tool_parsers/test_kimi_k2_tool_parser.py          [vllm]
- vLLM tests/reasoning/test_kimi_k25_reasoning_parser.py       [vllm-reasoning]
- vLLM tests/parser/engine/test_kimi_k2.py                     [vllm-engine]
- SGLang test/registered/function_call/test_kimik2_detector.py [sglang]
- Dynamo lib/parsers/src/tool_calling/xml/kimi_k2_parser.rs    [dynamo]

Each case runs batch and streaming (character by character and a 3-way split, via
`parser_check.run`) in both generations.

Adaptations (our contract decides differently; docs/parsers.md):
- BLANKS: whitespace right before a call section is markup (docs/parsers.md GLM example; the blank
  rule of docs/parsers.md), so `"I'll check. " + section` gives content `"I'll check."`.
- KEEP: text inside a section that is not a call, and text after the section, is content
  (docs/parsers.md principle 1, lossless); vLLM drops it.
- V2CUT: a call cut off by the end of output was already streamed under V2, which closes its
  JSON (docs/parsers.md principle 4 + docs "When V2 commits to a call"); V1 returns the jailed text
  as content (docs/parsers.md "V1 and V2"). vLLM returns `{"city": "Bei` verbatim.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conformance_check import VLLM_THINK_CASES
from parser_check import run, tool

from parsers import StreamParser, stream
from parsers.ids import counter_ids

SB = "<|tool_calls_section_begin|>"
SE = "<|tool_calls_section_end|>"
TB = "<|tool_call_begin|>"
TE = "<|tool_call_end|>"
AB = "<|tool_call_argument_begin|>"
MARKERS = (SB, SE, TB, TE, AB)
T = {"tool_parser": "kimi_k2"}
R = {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25"}
GENS = pytest.mark.parametrize("gen", [1, 2])


def call(tool_id: str, args: str, blank: str = " ") -> str:
    """vLLM `_tool`: a blank between the id and the argument marker (Dynamo's cases: none)."""
    return f"{TB}{tool_id}{blank}{AB}{args}{TE}"


def section(*calls: str) -> str:
    return SB + "".join(calls) + SE


def triples(msg: Any) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, json.loads(c.arguments)) for c in msg.tool_calls]


def deltas(chunks: list[str], gen: int, **kw: Any) -> list[Any]:
    p = StreamParser(generation=gen, id_factory=counter_ids(), **kw)
    out = [d for c in chunks for d in p.feed(c)]
    return out + p.finish()


def split_deltas(content: str, tools: list[tuple[str, str]]) -> list[str]:
    """vLLM `_split_tool_output_to_deltas`: special tokens as separate chunks."""
    out = [content, SB]
    for tool_id, args in tools:
        out += [TB, f"{tool_id} ", AB, f"{args} ", TE]
    return [*out, SE]


# --- [vllm] extract_tool_calls ---------------------------------------------------------------


@GENS
def test_vllm_no_tools(gen: int) -> None:
    msg = run("This is a test", gen, **T)
    assert (msg.content, msg.tool_calls) == ("This is a test", [])


@GENS
@pytest.mark.parametrize(
    ("text", "expected", "content"),
    [
        (
            "I'll check. " + section(call("functions.get_weather:0", '{"city": "Beijing"}')),
            [("functions.get_weather:0", "get_weather", {"city": "Beijing"})],
            "I'll check.",
        ),
        (
            "Compare weather. "
            + section(
                call("functions.get_weather:0", '{"city": "Beijing"}'),
                call("functions.get_weather:1", '{"city": "Shanghai"}'),
            ),
            [
                ("functions.get_weather:0", "get_weather", {"city": "Beijing"}),
                ("functions.get_weather:1", "get_weather", {"city": "Shanghai"}),
            ],
            "Compare weather.",
        ),
        (
            "Multiple tasks. "
            + section(
                call("functions.get_weather:0", '{"city": "New York"}'),
                call("functions.get_news:1", '{"topic": "technology"}'),
                call(
                    "functions.send_email:2",
                    '{"to": "user@example.com", "subject": "Daily Update"}',
                ),
            ),
            [
                ("functions.get_weather:0", "get_weather", {"city": "New York"}),
                ("functions.get_news:1", "get_news", {"topic": "technology"}),
                (
                    "functions.send_email:2",
                    "send_email",
                    {"to": "user@example.com", "subject": "Daily Update"},
                ),
            ],
            "Multiple tasks.",
        ),
        (
            "Process HTML. "
            + section(call("functions.process_html:0", '{"html": "<div>content</div>"}')),
            [("functions.process_html:0", "process_html", {"html": "<div>content</div>"})],
            "Process HTML.",
        ),
        (
            "Formatted. "
            + section(call("functions.process_data:0", '{\n  "name": "test",\n  "value": 123\n}')),
            [("functions.process_data:0", "process_data", {"name": "test", "value": 123})],
            "Formatted.",
        ),
        (
            "No prefix. " + section(call("get_weather:0", '{"city": "Tokyo"}')),
            [("get_weather:0", "get_weather", {"city": "Tokyo"})],
            "No prefix.",
        ),
        (
            "Empty args. " + section(call("functions.test:0", "{}")),
            [("functions.test:0", "test", {})],
            "Empty args.",
        ),
    ],
    ids=[
        "single",
        "parallel",
        "three",
        "angle_brackets",
        "multiline_json",
        "no_functions_prefix",
        "empty_arguments",
    ],
)
def test_vllm_extract_tool_calls(
    gen: int, text: str, expected: list[tuple[str, str, Any]], content: str
) -> None:
    msg = run(text, gen, **T)
    assert msg.content == content  # BLANKS (vLLM keeps the trailing blank)
    assert triples(msg) == expected
    assert all(c.id.split(":")[-1].isdigit() for c in msg.tool_calls)


@GENS
def test_vllm_invalid_json_still_extracted_verbatim(gen: int) -> None:
    text = (
        "Help. "
        + SB
        + call("functions.bad:0", '{"city": "Beijing"')
        + call("functions.good:1", '{"city": "Shanghai"}')
        + SE
    )
    msg = run(text, gen, **T)
    assert [c.name for c in msg.tool_calls] == ["bad", "good"]
    assert msg.tool_calls[0].arguments == '{"city": "Beijing"'  # kept as written


@GENS
def test_vllm_invalid_funcall_id_skipped(gen: int) -> None:
    bad = call("functions.invalid.0", '{"city": "Beijing"}')
    text = "Help. " + SB + bad + call("functions.valid:1", '{"city": "Shanghai"}') + SE
    msg = run(text, gen, **T)
    assert [c.name for c in msg.tool_calls] == ["valid"]
    assert msg.content == "Help." + bad  # KEEP: the malformed call is content, verbatim


@GENS
def test_vllm_native_ids_per_turn(gen: int) -> None:
    turn1 = run(
        "Let me check. " + section(call("functions.get_weather:0", '{"city": "Beijing"}')), gen, **T
    )
    turn2 = run("Now news. " + section(call("functions.get_news:0", '{"topic": "x"}')), gen, **T)
    assert [c.id for c in turn1.tool_calls] == ["functions.get_weather:0"]
    assert [c.id for c in turn2.tool_calls] == ["functions.get_news:0"]


WEATHER = tool("get_weather", city="string", unit="string")
READ_FILE = tool("read_file", path="string")
BOOK_FLIGHT = tool("book_flight", city="string")


@GENS
@pytest.mark.parametrize(
    ("tools", "args"),
    [
        ([WEATHER], {"city": "Tokyo", "unit": "celsius"}),
        ([READ_FILE, WEATHER], {"city": "Tokyo", "unit": "celsius"}),  # inferred by args
    ],
)
def test_vllm_bare_counter_id(gen: int, tools: list[Any], args: dict[str, Any]) -> None:
    msg = run("Let me check. " + section(call("0", json.dumps(args))), gen, tools=tools, **T)
    assert msg.content == "Let me check."  # BLANKS
    assert triples(msg) == [("0", "get_weather", args)]


@GENS
def test_vllm_bare_counter_single_tool_invalid_json(gen: int) -> None:
    msg = run("Let me check. " + section(call("0", '{"city": "Tokyo"')), gen, tools=[WEATHER], **T)
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("0", "get_weather", '{"city": "Tokyo"')
    ]


@GENS
@pytest.mark.parametrize(
    "args", ['{"city": "Tokyo"}', '{"city": "Tokyo"'], ids=["ambiguous", "malformed"]
)
def test_vllm_bare_counter_unsafe_inference_is_no_call(gen: int, args: str) -> None:
    msg = run("Let me check. " + section(call("0", args)), gen, tools=[WEATHER, BOOK_FLIGHT], **T)
    assert msg.tool_calls == []
    assert "Let me check." in (msg.content or "")


# --- [vllm] streaming --------------------------------------------------------------------------


@GENS
def test_vllm_streaming_single_and_multiple(gen: int) -> None:
    chunks = split_deltas(
        "Compare weather. ",
        [
            ("functions.get_weather:0", '{"city": "Tokyo"}'),
            ("functions.get_weather:1", '{"city": "NYC"}'),
        ],
    )
    msg = stream(chunks, generation=gen, **T)
    assert triples(msg) == [
        ("functions.get_weather:0", "get_weather", {"city": "Tokyo"}),
        ("functions.get_weather:1", "get_weather", {"city": "NYC"}),
    ]
    assert msg.content == "Compare weather."
    assert all(m not in (msg.content or "") for m in MARKERS)


@GENS
def test_vllm_streaming_bare_counter(gen: int) -> None:
    chunks = split_deltas("I'll help. ", [("0", json.dumps({"city": "Beijing", "unit": "c"}))])
    msg = stream(chunks, generation=gen, tools=[READ_FILE, WEATHER], **T)
    assert triples(msg) == [("0", "get_weather", {"city": "Beijing", "unit": "c"})]


@GENS
def test_vllm_incremental_arguments(gen: int) -> None:
    chunks = [
        "Help. ",
        SB,
        TB,
        "functions.get_weather:0 ",
        AB,
        '{"ci',
        'ty": "Be',
        'ijing"}',
        " ",
        TE,
        SE,
    ]
    msg = stream(chunks, generation=gen, **T)
    assert triples(msg) == [("functions.get_weather:0", "get_weather", {"city": "Beijing"})]


@GENS
@pytest.mark.parametrize(
    "text",
    [
        "Single. " + section(call("functions.get_weather:0", '{"city": "Beijing"}')),
        "Multi. "
        + section(
            call("functions.get_weather:0", '{"city": "Tokyo"}'),
            call("functions.get_news:1", '{"topic": "tech"}'),
        ),
        "No prefix id. " + section(call("get_weather:0", '{"city": "NYC"}')),
    ],
)
def test_vllm_streaming_matches_nonstreaming(gen: int, text: str) -> None:
    run(text, gen, **T)  # asserts stream == batch for two chunkings
    for size in (1, 2, 3, 5, 8):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        assert triples(stream(pieces, generation=gen, **T)) == triples(run(text, gen, **T))


@GENS
def test_vllm_noise_between_markers_is_kept_as_content(gen: int) -> None:
    chunks = [
        "Reasoning. ",
        SB,
        " spurious noise ",
        TB,
        "functions.test:0 ",
        AB,
        '{"k": "v"} ',
        TE,
        SE,
    ]
    msg = stream(chunks, generation=gen, **T)
    assert triples(msg) == [("functions.test:0", "test", {"k": "v"})]
    # KEEP: vLLM drops the noise; we keep it (lossless), trimmed of blanks next to markers.
    assert msg.content == "Reasoning.spurious noise"


@GENS
def test_vllm_empty_tool_section(gen: int) -> None:
    msg = run("Reasoning. " + SB + SE, gen, **T)
    assert msg.tool_calls == []


@GENS
def test_vllm_truncated_call_no_end_marker(gen: int) -> None:
    chunks = ["I'll check. ", SB, TB, "functions.get_weather:0 ", AB, '{"city": "Bei']
    msg = stream(chunks, generation=gen, **T)
    if gen == 2:  # V2CUT: never repaired, as vLLM: '{"city": "Bei'
        assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
            ("functions.get_weather:0", "get_weather", '{"city": "Bei')
        ]
        assert all(m not in (msg.content or "") for m in MARKERS)
    else:  # V1: the jail is returned as content, verbatim
        assert (msg.content, msg.tool_calls) == ("".join(chunks), [])


@GENS
def test_vllm_content_after_tool_section_is_kept(gen: int) -> None:
    chunks = [
        "Before. ",
        SB,
        TB,
        "functions.get_weather:0 ",
        AB,
        '{"city": "Tokyo"} ',
        TE,
        SE,
        " After tools.",
    ]
    msg = stream(chunks, generation=gen, **T)
    assert triples(msg) == [("functions.get_weather:0", "get_weather", {"city": "Tokyo"})]
    assert msg.content == "Before. After tools."  # KEEP (vLLM drops " After tools.")


@GENS
def test_vllm_plain_text_streams_as_content(gen: int) -> None:
    got = deltas(["This is just ", "regular text ", "without tools."], gen, **T)
    assert "".join(d.content or "" for d in got) == "This is just regular text without tools."
    assert all(not d.tool_calls for d in got)


# --- [vllm-reasoning] kimi_k25 ------------------------------------------------------------------

TOOL_SECTION = SB + TB + "functions.read:0" + AB + "{'filePath':'file.txt'}" + TE + SE


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        *VLLM_THINK_CASES,
        ("<think>This is a reasoning section</think>", "This is a reasoning section", None),
        (
            "\n<think>This is a reasoning section</think>\nThis is the rest",
            "This is a reasoning section",
            "\nThis is the rest",
        ),
    ],
)
def test_vllm_reasoning_kimi_k25(
    gen: int, text: str, reasoning: str | None, content: str | None
) -> None:
    msg = run(text, gen, reasoning_parser="kimi_k25")
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning"),
    [
        ("<think>I should read that file" + TOOL_SECTION, "I should read that file"),
        ("<think>" + TOOL_SECTION, None),
        ("<think>I should read that file</think>" + TOOL_SECTION, "I should read that file"),
    ],
    ids=["during_think", "immediately_after_think", "after_think_end"],
)
def test_vllm_reasoning_tool_section_ends_reasoning(
    gen: int, text: str, reasoning: str | None
) -> None:
    # Reasoning parser only: the section is content, never reasoning.
    msg = run(text, gen, reasoning_parser="kimi_k25")
    assert (msg.reasoning_content, msg.content) == (reasoning, TOOL_SECTION)
    # With the tool parser: the call (arguments not valid JSON: kept as written).
    msg = run(text, gen, **R)
    assert msg.reasoning_content == reasoning
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("functions.read:0", "read", "{'filePath':'file.txt'}")
    ]
    assert msg.content is None


# --- [vllm-engine] ------------------------------------------------------------------------------


@GENS
def test_engine_reasoning_then_calls(gen: int) -> None:
    msg = run("<think>Let me think.</think>Here is the answer.", gen, **R)
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == (
        "Let me think.",
        "Here is the answer.",
        [],
    )
    text = "<think>Multiple tasks.</think>" + section(
        call("functions.get_weather:0", '{"city": "NYC"}'),
        call("functions.get_news:1", '{"topic": "tech"}'),
        call("functions.send_email:2", '{"to": "a@b.com"}'),
    )
    msg = run(text, gen, **R)
    assert [c.name for c in msg.tool_calls] == ["get_weather", "get_news", "send_email"]
    assert msg.content is None
    assert msg.reasoning_content == "Multiple tasks."


@GENS
def test_engine_implicit_reasoning_end_via_tool_section(gen: int) -> None:
    msg = run(
        "<think>No closing think tag." + section(call("functions.search:0", '{"q": "vllm"}')),
        gen,
        **R,
    )
    assert msg.reasoning_content == "No closing think tag."
    assert triples(msg) == [("functions.search:0", "search", {"q": "vllm"})]


@GENS
def test_engine_streaming_chunks(gen: int) -> None:
    chunks = [
        "<think>",
        "Think.",
        "</think>",
        SB,
        TB,
        "functions.search:0 ",
        AB,
        '{"q":',
        ' "hello world"',
        "}",
        " ",
        TE,
        SE,
    ]
    msg = stream(chunks, generation=gen, **R)
    assert msg.reasoning_content == "Think."
    assert triples(msg) == [("functions.search:0", "search", {"q": "hello world"})]
    assert msg.content is None


@GENS
def test_engine_thinking_disabled(gen: int) -> None:
    msg = run("Hello, how can I help?", gen, thinking=False, **R)
    assert (msg.reasoning_content, msg.content) == (None, "Hello, how can I help?")
    msg = run(
        section(call("functions.get_weather:0", '{"city": "Paris"}')), gen, thinking=False, **R
    )
    assert triples(msg) == [("functions.get_weather:0", "get_weather", {"city": "Paris"})]


# --- [sglang] -----------------------------------------------------------------------------------


@GENS
def test_sglang_arguments_keep_model_spacing(gen: int) -> None:
    text = SB + TB + "functions.ReadFile:0" + AB + '{"path": "/test.py"}' + TE + SE
    msg = run(text, gen, **T)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("ReadFile", '{"path": "/test.py"}')]
    assert msg.content is None


@GENS
def test_sglang_model_counters_are_kept_in_ids_and_indexes_are_local(gen: int) -> None:
    text = (
        SB
        + TB
        + "functions.ReadFile:5"
        + AB
        + '{"path": "/a.py"}'
        + TE
        + TB
        + "functions.get_weather:6"
        + AB
        + '{"city": "Tokyo"}'
        + TE
        + SE
    )
    msg = run(text, gen, **T)
    assert [(c.id, c.name) for c in msg.tool_calls] == [
        ("functions.ReadFile:5", "ReadFile"),
        ("functions.get_weather:6", "get_weather"),
    ]
    indexes = sorted({c.index for d in deltas([text], gen, **T) for c in d.tool_calls})
    assert indexes == [0, 1]


@GENS
def test_sglang_hyphenated_names(gen: int) -> None:
    chunks = [SB + TB + "functions.list-files:0" + AB + '{"path', '": "/home"}', TE, SE]
    msg = stream(chunks, generation=gen, **T)
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("list-files", {"path": "/home"})
    ]
    msg = run(
        SB + TB + "functions.mcp__portal__search-documents:0" + AB + '{"path": "/docs"}' + TE + SE,
        gen,
        **T,
    )
    assert [c.name for c in msg.tool_calls] == ["mcp__portal__search-documents"]


@GENS
def test_sglang_trailing_literal_angle_is_not_dropped(gen: int) -> None:
    assert run("normal text <", gen, **T).content == "normal text <"


@GENS
def test_sglang_content_before_section_after_think(gen: int) -> None:
    chunks = [
        "<think>",
        "Thinking about it...",
        "</think>This is a ",
        "content:" + SB,
        TB + "functions.get_weather:0",
        AB + '{"city": "London"}',
        TE,
        SE,
    ]
    msg = stream(chunks, generation=gen, **R)
    assert (msg.reasoning_content, msg.content) == ("Thinking about it...", "This is a content:")
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"city": "London"}')
    ]


@GENS
def test_sglang_two_sections_in_one_chunk(gen: int) -> None:
    text = (
        "<think>Thinking about it...</think>This is a content:"
        + SB
        + TB
        + "functions.get_weather:0"
        + AB
        + '{"city": "London"}'
        + TE
        + SE
        + SB
        + TB
        + "functions.get_weather:1"
        + AB
        + '{"city": "Delhi"}'
        + TE
        + SE
    )
    msg = run(text, gen, **R)
    assert (msg.reasoning_content, msg.content) == ("Thinking about it...", "This is a content:")
    assert [c.arguments for c in msg.tool_calls] == ['{"city": "London"}', '{"city": "Delhi"}']


# --- [dynamo] -----------------------------------------------------------------------------------


WEATHER_0, NYC = "functions.get_weather:0", '{"location":"NYC"}'
TIME_1, EST = "functions.get_time:1", '{"timezone":"EST"}'


@GENS
@pytest.mark.parametrize(
    ("text", "names"),
    [
        (section(call(WEATHER_0, NYC, "")), ["get_weather"]),
        (section(call(WEATHER_0, NYC, ""), call(TIME_1, EST, "")), ["get_weather", "get_time"]),
        (section(call("functions.get_current_time:0", "{}", "")), ["get_current_time"]),
        (section(call("get_weather:0", NYC, "")), ["get_weather"]),
        # missing section end (max_tokens): complete calls are kept
        (SB + call(WEATHER_0, NYC, ""), ["get_weather"]),
        (SB + call(WEATHER_0, NYC, "") + call(TIME_1, EST, ""), ["get_weather", "get_time"]),
        (
            "<|tool_call_section_begin|>" + call(WEATHER_0, NYC, "") + "<|tool_call_section_end|>",
            ["get_weather"],
        ),
        (
            SB
            + "\n"
            + TB
            + " functions.search:0 "
            + AB
            + ' {"query":"rust programming"} '
            + TE
            + "\n"
            + SE,
            ["search"],
        ),
    ],
    ids=[
        "simple",
        "two",
        "no_args",
        "no_prefix",
        "no_section_end",
        "two_no_section_end",
        "singular",
        "whitespace",
    ],
)
def test_dynamo_calls(gen: int, text: str, names: list[str]) -> None:
    msg = run(text, gen, **T)
    assert [c.name for c in msg.tool_calls] == names
    assert msg.content is None
    for c in msg.tool_calls:
        json.loads(c.arguments)


@GENS
def test_dynamo_exact_compact_arguments_and_normal_text(gen: int) -> None:
    text = (
        "I'll help you with that. "
        + SB
        + TB
        + "functions.get_weather:0"
        + AB
        + '{"location":"Dallas"}'
        + TE
        + SE
        + " Let me check."
    )
    msg = run(text, gen, **T)
    assert [c.arguments for c in msg.tool_calls] == ['{"location":"Dallas"}']
    # BLANKS: Dynamo gives "I'll help you with that.  Let me check." (both blanks).
    assert msg.content == "I'll help you with that. Let me check."


@GENS
def test_dynamo_invalid_json_falls_back_to_raw_string(gen: int) -> None:
    text = SB + TB + "functions.get_weather:0" + AB + "{invalid json here}" + TE + SE
    msg = run(text, gen, **T)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", "{invalid json here}")
    ]


@GENS
@pytest.mark.parametrize("header", ["just_a_name", "functions.get_weather:abc", ":::0"])
def test_dynamo_invalid_ids_rejected(gen: int, header: str) -> None:
    text = SB + TB + header + AB + '{"key":"val"}' + TE + SE
    assert run(text, gen, **T).tool_calls == []
    text = (
        SB
        + TB
        + "no_colon"
        + AB
        + '{"a":"b"}'
        + TE
        + TB
        + "functions.valid:0"
        + AB
        + '{"x":"y"}'
        + TE
        + SE
    )
    assert [c.name for c in run(text, gen, **T).tool_calls] == ["valid"]


@GENS
def test_dynamo_truncated_json_inside_complete_fences_is_a_call(gen: int) -> None:
    # Dynamo drops this call ("today"); the contract keeps calls whose arguments are not valid
    # JSON as the raw string, and our end-marker rule treats a `<|tool_call_end|>` followed
    # only by a section marker as the end of a cut string (docs/parsers.md, Kimi K2).
    text = SB + TB + "functions.get_weather:0" + AB + '{"location":"NYC' + TE + SE
    msg = run(text, gen, **T)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_weather", '{"location":"NYC')]


@GENS
def test_dynamo_truncated_mid_argument(gen: int) -> None:
    first = TB + "functions.get_weather:0" + AB + '{"location":"NYC"}' + TE
    text = SB + first + TB + "functions.get_time:1" + AB + '{"tz"'
    msg = run(text, gen, **T)
    assert [c.name for c in msg.tool_calls][:1] == ["get_weather"]
    if gen == 1:  # V1: the complete call is kept, the cut one is content, verbatim
        assert [c.name for c in msg.tool_calls] == ["get_weather"]
        assert msg.content == TB + "functions.get_time:1" + AB + '{"tz"'
    else:  # V2CUT: both calls were streamed; the cut one never repaired (`{`: as sent)
        assert [c.name for c in msg.tool_calls] == ["get_weather", "get_time"]
        assert msg.tool_calls[1].arguments == "{"


@GENS
def test_dynamo_html_and_concatenated_calls(gen: int) -> None:
    html = '{"template":"<div class=\\"main\\"><h1>Title</h1><p>Content</p></div>","format":"html"}'
    text = (
        SB
        + TB
        + "functions.render_html:0"
        + AB
        + html
        + TE
        + TB
        + "functions.search:1"
        + AB
        + '{"q":"rust"}'
        + TE
        + TB
        + "functions.search:2"
        + AB
        + '{"q":"go"}'
        + TE
        + SE
    )
    msg = run(text, gen, **T)
    assert [c.name for c in msg.tool_calls] == ["render_html", "search", "search"]
    assert "</div>" in json.loads(msg.tool_calls[0].arguments)["template"]


# --- [vllm-reasoning] test_kimi_k2_reasoning_parser.py ---------------------------------------


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            "<think>step by step reasoning</think>final answer",
            "step by step reasoning",
            "final answer",
        ),
        ("<think></think>final answer", None, "final answer"),  # vLLM: "" (we report None)
        ("implicit reasoning with no tags", "implicit reasoning with no tags", None),
        ("some reasoning" + SB + "tool call data", "some reasoning", SB + "tool call data"),
    ],
)
def test_vllm_kimi_k2_reasoning_parser(
    gen: int, text: str, reasoning: str | None, content: str | None
) -> None:
    msg = run(text, gen, reasoning_parser="kimi_k25")
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_vllm_kimi_k2_thinking_disabled_is_identity(gen: int) -> None:
    msg = run("plain answer", gen, reasoning_parser="kimi_k25", thinking=False)
    assert (msg.reasoning_content, msg.content) == (None, "plain answer")
