"""Kimi K2 / K2.5 (`kimi_k2`, reasoning `kimi_k25`): the family's cases in both generations.

Chunking invariance, losslessness and quoted openers run over parser_samples/kimi_k2.py in the
shared tests; here are the grammar's own edge cases, each checked on both routes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_check import call_deltas_by_chunk
from parser_samples.kimi_k2 import SB, SE, call

import parsers.families.kimi_k2 as k2
from parsers import parse, stream
from parsers.families.kimi_k2 import parse_call_id
from parsers.ids import counter_ids
from parsers.types import ParsedMessage

T = "kimi_k2"
R = "kimi_k25"
GENS = [1, 2]
ROUTE = {1: "legacy_jail", 2: "parser_v2"}


def run(text: str, gen: int, **kw: Any) -> ParsedMessage:
    """Batch parse; also checks the route and that a per-character stream agrees."""
    kw.setdefault("tool_parser", T)
    msg = parse(text, generation=gen, id_factory=counter_ids(), **kw)
    assert msg.route == ROUTE[gen]
    assert stream(list(text), generation=gen, id_factory=counter_ids(), **kw) == msg
    return msg


def calls(msg: ParsedMessage) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, json.loads(c.arguments)) for c in msg.tool_calls]


@pytest.mark.parametrize("gen", GENS)
def test_spec_example(gen: int) -> None:
    text = (
        "<think>Let me check.</think>"
        + SB
        + call("functions.get_weather:0", '{"location":"Paris"}')
        + SE
    )
    msg = run(text, gen, reasoning_parser=R)
    assert msg.reasoning_content == "Let me check."
    assert msg.content is None
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("functions.get_weather:0", "get_weather", '{"location":"Paris"}')
    ]
    assert msg.finish_reason == "tool_calls"


@pytest.mark.parametrize("gen", GENS)
def test_several_calls_with_text_before_between_and_after(gen: int) -> None:
    text = (
        "I'll check."
        + SB
        + "\n"
        + call("functions.get_weather:0", '{"city": "Beijing"}')
        + "\n"
        + call("functions.get_weather:1", '{"city": "Shanghai"}')
        + "\n"
        + call("functions.send_email:2", '{"to": "a@b.c", "subject": "Daily"}')
        + "\n"
        + SE
        + " Then I will summarize."
    )
    msg = run(text, gen)
    assert msg.content == "I'll check. Then I will summarize."
    assert calls(msg) == [
        ("functions.get_weather:0", "get_weather", {"city": "Beijing"}),
        ("functions.get_weather:1", "get_weather", {"city": "Shanghai"}),
        ("functions.send_email:2", "send_email", {"to": "a@b.c", "subject": "Daily"}),
    ]


@pytest.mark.parametrize("gen", GENS)
def test_text_inside_the_section_between_calls_is_content(gen: int) -> None:
    text = SB + call("functions.a:0", "{}") + " and then " + call("functions.b:1", "{}") + SE
    msg = run(text, gen)
    assert msg.content == "and then"
    assert [c.name for c in msg.tool_calls] == ["a", "b"]


@pytest.mark.parametrize("gen", GENS)
def test_reasoning_then_calls(gen: int) -> None:
    text = "<think>Two cities.</think>Checking both." + SB + call("functions.w:0", '{"c": 1}') + SE
    msg = run(text, gen, reasoning_parser=R)
    assert (msg.reasoning_content, msg.content) == ("Two cities.", "Checking both.")
    assert calls(msg) == [("functions.w:0", "w", {"c": 1})]


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("start", [SB, "<|tool_call_section_begin|>", "<|tool_call_begin|>"])
def test_tool_marker_ends_unclosed_reasoning(gen: int, start: str) -> None:
    body = call("functions.read:0", '{"path": "a.txt"}')
    if start == "<|tool_call_begin|>":  # a bare call: its own start marker ends reasoning
        start = ""
    msg = run("<think>I should read that file" + start + body, gen, reasoning_parser=R)
    assert msg.reasoning_content == "I should read that file"
    assert msg.content is None
    assert calls(msg) == [("functions.read:0", "read", {"path": "a.txt"})]


@pytest.mark.parametrize("gen", GENS)
def test_reasoning_is_forced_and_a_leading_think_is_only_the_opener(gen: int) -> None:
    assert run("plan</think>answer", gen, reasoning_parser=R).reasoning_content == "plan"
    msg = run("\n<think>plan</think>answer", gen, reasoning_parser=R)
    assert (msg.reasoning_content, msg.content) == ("plan", "answer")
    # a later <think> is not a new block: an opener inside reasoning is markup
    assert run("a <think> b</think>", gen, reasoning_parser=R).reasoning_content == "a  b"


@pytest.mark.parametrize("gen", GENS)
def test_prefill_split_close_marker_then_call(gen: int) -> None:
    chunks = ["The user wants weather. thought<", "/think>", SB, call("functions.w:0", "{}"), SE]
    msg = stream(chunks, tool_parser=T, reasoning_parser=R, generation=gen, prompt="x<think>")
    assert msg.reasoning_content == "The user wants weather. thought"
    assert [c.name for c in msg.tool_calls] == ["w"]


def test_thinking_false_does_not_start_in_reasoning() -> None:
    for gen in (1, 2):  # explicit markers are still parsed
        msg = run("<think>hm</think>Answer: 42", gen, reasoning_parser=R, thinking=False)
        assert (msg.reasoning_content, msg.content) == ("hm", "Answer: 42")
        msg = run("plain answer", gen, reasoning_parser=R, thinking=False)
        assert (msg.reasoning_content, msg.content) == (None, "plain answer")


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("args", ["{}", "", "  "])
def test_empty_arguments(gen: int, args: str) -> None:
    msg = run(SB + call("functions.get_current_time:0", args) + SE, gen)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_current_time", "{}")]


@pytest.mark.parametrize("gen", GENS)
def test_nested_json_and_multiline_arguments(gen: int) -> None:
    args = {
        "database": {"primary": {"host": "db1", "port": 5432, "pool": {"min": 5, "max": 20}}},
        "features": ["auth", {"x": [True, None, -0.5, 1e-3, 2.5]}],
    }
    text = SB + call("functions.create_config:0", json.dumps(args, indent=2)) + SE
    msg = run(text, gen)
    assert calls(msg) == [("functions.create_config:0", "create_config", args)]
    # JSON arguments keep the model's spacing (as vLLM returns them; docs/parsers.md)
    assert msg.tool_calls[0].arguments == json.dumps(args, indent=2)


@pytest.mark.parametrize("gen", GENS)
def test_non_ascii_text_and_arguments(gen: int) -> None:
    text = "Je vérifie ☀" + SB + call("functions.météo:0", '{"ville": "Zürich", "q": "東京"}') + SE
    msg = run(text, gen)
    assert msg.content == "Je vérifie ☀"
    # not ASCII-escaped, spacing as written
    assert msg.tool_calls[0].arguments == '{"ville": "Zürich", "q": "東京"}'
    assert msg.tool_calls[0].name == "météo"


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize(
    ("call_id", "name"),
    [
        ("functions.get_weather:0", "get_weather"),
        ("get_weather:0", "get_weather"),  # no prefix
        ("functions.ns.tool_name:12", "ns.tool_name"),  # dots stay in the name
        ("functions.mcp__portal__search-documents:3", "mcp__portal__search-documents"),
        (" functions.spaced:1 ", "spaced"),  # whitespace around the id
    ],
)
def test_call_id_is_native_and_name_comes_from_it(gen: int, call_id: str, name: str) -> None:
    msg = run(SB + call(call_id, '{"a": 1}') + SE, gen)
    assert [(c.id, c.name) for c in msg.tool_calls] == [(call_id.strip(), name)]


@pytest.mark.parametrize(
    "header",
    ["functions.invalid.0", "just_a_name", "functions.x:abc", "functions.:0", ":0", "a b:0"],
)
def test_malformed_ids_are_rejected(header: str) -> None:
    assert parse_call_id(header) is None


@pytest.mark.parametrize("gen", GENS)
def test_malformed_call_is_content_verbatim_and_next_call_parses(gen: int) -> None:
    bad = call("functions.invalid.0", '{"city": "Beijing"}')
    text = "Help." + SB + bad + call("functions.valid:1", '{"city": "Shanghai"}') + SE
    msg = run(text, gen)
    assert msg.content == "Help." + bad
    assert calls(msg) == [("functions.valid:1", "valid", {"city": "Shanghai"})]


@pytest.mark.parametrize("gen", GENS)
def test_bare_call_start_with_bad_id_is_prose(gen: int) -> None:
    text = "See <|tool_call_begin|>not an id<|tool_call_argument_begin|>{}<|tool_call_end|> ok"
    msg = run(text, gen)
    assert (msg.content, msg.tool_calls) == (text, [])


@pytest.mark.parametrize("gen", GENS)
def test_call_missing_its_end_marker_does_not_swallow_the_next(gen: int) -> None:
    text = (
        SB
        + call("functions.a:0", '{"x":"1"}')
        + '<|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{"y":"2"}'
        + call("functions.c:2", '{"z":"3"}')
        + SE
    )
    msg = run(text, gen)
    assert calls(msg) == [
        ("functions.a:0", "a", {"x": "1"}),
        ("functions.b:1", "b", {"y": "2"}),
        ("functions.c:2", "c", {"z": "3"}),
    ]


@pytest.mark.parametrize("gen", GENS)
def test_end_marker_lookalike_inside_a_json_string(gen: int) -> None:
    args = {"text": "type <|tool_call_end|> to stop", "n": 2}
    text = SB + call("functions.echo:0", json.dumps(args)) + call("functions.f:1", "{}") + SE
    msg = run(text, gen)
    assert calls(msg) == [("functions.echo:0", "echo", args), ("functions.f:1", "f", {})]


@pytest.mark.parametrize("gen", GENS)
def test_string_cut_off_before_the_end_marker(gen: int) -> None:
    text = SB + call("functions.get_weather:0", '{"location":"NYC') + SE + "after"
    msg = run(text, gen)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"NYC')  # not JSON: kept as written
    ]
    assert msg.content == "after"


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize("args", ["{invalid json here}", "{'filePath':'file.txt'}", '{"a": 1'])
def test_arguments_that_are_not_json_are_kept_as_written(gen: int, args: str) -> None:
    text = SB + call("functions.bad:0", args) + call("functions.good:1", '{"b":2}') + SE
    msg = run(text, gen)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("bad", args),
        ("good", '{"b":2}'),
    ]


@pytest.mark.parametrize("gen", GENS)
def test_missing_section_end_keeps_complete_calls(gen: int) -> None:
    text = "x" + SB + call("functions.a:0", '{"q":"rust"}') + call("functions.b:1", '{"q":"go"}')
    msg = run(text, gen)
    assert msg.content == "x"
    assert [c.name for c in msg.tool_calls] == ["a", "b"]


@pytest.mark.parametrize("gen", GENS)
def test_bare_call_without_section_start(gen: int) -> None:
    text = "Sure." + call("functions.search:0", '{"q": "rust"}') + " Done."
    msg = run(text, gen)
    assert msg.content == "Sure. Done."
    assert calls(msg) == [("functions.search:0", "search", {"q": "rust"})]


@pytest.mark.parametrize("gen", GENS)
def test_singular_section_spellings(gen: int) -> None:
    text = (
        "<|tool_call_section_begin|>" + call("functions.f:0", "{}") + "<|tool_call_section_end|>ok"
    )
    msg = run(text, gen)
    assert (msg.content, [c.name for c in msg.tool_calls]) == ("ok", ["f"])


@pytest.mark.parametrize("gen", GENS)
def test_unterminated_call_at_end_of_output(gen: int) -> None:
    tail = (
        SB + '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Bei'
    )
    msg = run("Checking." + tail, gen)
    if gen == 1:  # the jail releases an unparsed call as content, verbatim
        assert (msg.content, msg.tool_calls) == ("Checking." + tail, [])
    else:  # V2 already streamed the call: it stays, never repaired (arguments as streamed)
        assert msg.content == "Checking."
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_weather", '{"city": "Bei')]


@pytest.mark.parametrize("gen", GENS)
def test_cut_inside_the_call_header_is_content(gen: int) -> None:
    text = "Checking." + SB + "<|tool_call_begin|>functions.get_wea"
    msg = run(text, gen)
    assert msg.tool_calls == []
    # V1 releases the whole jail; V2 consumed the section marker and returns the call's text
    assert msg.content == (text if gen == 1 else "Checking.<|tool_call_begin|>functions.get_wea")


def test_v2_streams_arguments_before_the_call_ends_v1_sends_it_whole() -> None:
    head = SB + "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
    chunks = [head, '{"query": "rust', " programming", '", "n": 5', "}", "<|tool_call_end|>", SE]
    seen = {gen: call_deltas_by_chunk(chunks, gen, tool_parser=T) for gen in GENS}
    # V2: the name right after the header, string text as it arrives, the number (with its key)
    # once complete
    assert seen[2] == [
        (0, "search", None),
        (1, None, '{"query": "rust'),
        (2, None, " programming"),
        (3, None, '"'),
        (4, None, ', "n": 5}'),
    ]
    # V1: nothing until the jail closes at the section end, then the whole call in one delta
    assert seen[1] == [(6, "search", '{"query": "rust programming", "n": 5}')]


def test_tool_choice_none_strips_the_markup_in_v2() -> None:
    text = "Answer." + SB + call("functions.f:0", "{}") + SE
    v2 = run(text, 2, tool_choice="none")
    assert (v2.content, v2.tool_calls, v2.finish_reason) == ("Answer.", [], "stop")
    v1 = run(text, 1, tool_choice="none")
    assert (v1.content, v1.tool_calls) == (text, [])


@pytest.mark.parametrize("gen", GENS)
def test_named_tool_choice_drops_other_calls(gen: int) -> None:
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("a", "b")
    ]
    text = SB + call("functions.a:0", '{"x":1}') + call("functions.b:1", '{"y":2}') + SE
    choice = {"type": "function", "function": {"name": "b"}}
    msg = run(text, gen, tools=tools, tool_choice=choice)
    assert [(c.id, c.name) for c in msg.tool_calls] == [("functions.b:1", "b")]


@pytest.mark.parametrize("gen", GENS)
def test_length_finish_keeps_parsed_calls(gen: int) -> None:
    text = SB + call("functions.f:0", '{"a":1}')
    msg = parse(text, tool_parser=T, generation=gen, finish_reason="length")
    assert [c.name for c in msg.tool_calls] == ["f"]
    assert msg.finish_reason == "length"  # as OpenAI reports a response cut by the limit


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize(
    ("head", "reasoning"),
    [("<think>I should read that file", "I should read that file"), ("<think>", None)],
)
def test_reasoning_parser_alone_ends_reasoning_at_the_tool_section(
    gen: int, head: str, reasoning: str | None
) -> None:
    section = SB + call("functions.read:0", "{'filePath':'file.txt'}") + SE
    msg = run(head + section, gen, tool_parser=None, reasoning_parser=R)
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == (reasoning, section, [])


def _tool(name: str, *props: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    params = {"type": "object", "properties": {p: {"type": "string"} for p in props}}
    if required:
        params["required"] = list(required)
    return {"type": "function", "function": {"name": name, "parameters": params}}


WEATHER = _tool("get_weather", "city", "unit")
READ_FILE = _tool("read_file", "path")
BOOK_FLIGHT = _tool("book_flight", "city")


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize(
    ("tools", "args", "expected"),
    [
        ([WEATHER], '{"city": "Tokyo", "unit": "celsius"}', '{"city": "Tokyo", "unit": "celsius"}'),
        ([WEATHER], '{"city": "Tokyo"', '{"city": "Tokyo"'),  # one tool: even unparsable
        ([READ_FILE, WEATHER], '{"city": "Tokyo", "unit": "c"}', '{"city": "Tokyo", "unit": "c"}'),
    ],
)
def test_bare_counter_id_takes_the_name_from_the_declared_tools(
    gen: int, tools: list[dict[str, Any]], args: str, expected: str
) -> None:
    text = "Let me check." + SB + call("0 ", args) + SE
    msg = run(text, gen, tools=tools)
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [("0", "get_weather", expected)]
    assert msg.content == "Let me check."


@pytest.mark.parametrize("gen", GENS)
@pytest.mark.parametrize(
    ("tools", "args"),
    [
        ([WEATHER, BOOK_FLIGHT], '{"city": "Tokyo"}'),  # ambiguous
        ([WEATHER, BOOK_FLIGHT], '{"city": "Tokyo"'),  # no arguments to infer from
        ([], '{"city": "Tokyo"}'),  # nothing declared
    ],
)
def test_bare_counter_id_that_names_no_single_tool_is_not_a_call(
    gen: int, tools: list[dict[str, Any]], args: str
) -> None:
    bad = call("0", args)
    msg = run("Check." + SB + bad + SE, gen, tools=tools or None)
    assert msg.tool_calls == []
    assert msg.content == ("Check." + SB + bad + SE if gen == 1 else "Check." + bad)


@pytest.mark.parametrize("gen", GENS)
def test_repeated_ids_are_made_unique(gen: int) -> None:
    text = SB + call("functions.f:0", "{}") + call("functions.f:0", "{}") + SE
    msg = run(text, gen)
    assert [c.id for c in msg.tool_calls] == ["functions.f:0", "functions.f:1"]


@pytest.mark.parametrize("gen", GENS)
def test_repeated_ids_take_the_least_free_index_in_order(gen: int) -> None:
    # (the search for a free index resumes where the last one stopped: from 0 each time, a
    # looping model's repeated id made a long section quadratic)
    ids = ["functions.f:2", "functions.f:0", "functions.f:0", "functions.f:0", "functions.g:0"]
    ids += ["functions.f:0", "functions.f:9", "functions.f:0"]
    text = SB + "".join(call(i, "{}") for i in ids) + SE
    msg = run(text, gen)
    assert [c.id for c in msg.tool_calls] == [
        "functions.f:2",
        "functions.f:0",
        "functions.f:1",
        "functions.f:3",
        "functions.g:0",
        "functions.f:4",
        "functions.f:9",
        "functions.f:5",
    ]


# Long feeds. Kimi K2's section scanner takes a long feed (V1 hands over the whole jailed region
# at once) in bounded steps (`_FEED_STEP`), which keeps many markers in one feed linear
# (`<|tool_call_begin|>` x 10,000 is the bench's adversarial shape). Stepping must never change a
# result: each output here is parsed with the step as shipped, unbounded and tiny (a boundary
# inside every marker).
LONG_KW = {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25", "prompt": "x"}
LONG = "é☀ " * 6000  # 18,000 characters: calls and text straddle the 32 KiB steps


def _outputs() -> dict[str, tuple[str, int]]:
    big_args = json.dumps({"text": LONG, "n": [1, 2, 3]})
    calls = "".join(
        call(f"functions.f{i}:{i}", big_args if i % 3 == 0 else '{"i": 1}') for i in range(9)
    )
    return {
        "calls": ("Intro. " + SB + calls + SE + " Outro.", 9),
        "openers": (SB + "<|tool_call_begin|>" * 5000 + SE + " tail", 0),
        "junk between calls": (SB + (LONG + call("functions.g:0", '{"a": 1}')) * 3 + SE, 3),
        "rejected bare call": ("<|tool_call_begin|>" + LONG * 3 + " not a header", 0),
        "cut section": (SB + call("functions.h:0", big_args) + LONG + "<|tool_call_begin|>", 1),
    }


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize("name", list(_outputs()))
def test_stepping_a_long_feed_changes_nothing(
    name: str, gen: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, calls = _outputs()[name]
    assert len(text) > k2._FEED_STEP  # the stepped path is taken
    results = []
    for step in (k2._FEED_STEP, 1 << 62, 7):
        monkeypatch.setattr(k2, "_FEED_STEP", step)
        results.append(parse(text, generation=gen, id_factory=counter_ids(), **LONG_KW))  # type: ignore[arg-type]
    assert results[0] == results[1] == results[2]
    msg = results[0]
    assert len(msg.tool_calls) == calls
    if name == "rejected bare call":
        # nothing lost across the steps of a rejected region (V2: back in the forced reasoning)
        assert (msg.content or "") + (msg.reasoning_content or "") == text
    for c in msg.tool_calls:
        json.loads(c.arguments)


@pytest.mark.parametrize("gen", [1, 2])
@pytest.mark.parametrize(
    "tail",
    [
        "",  # cut off inside the header: not a call, its text kept
        ":0<|tool_call_argument_begin|>{}<|tool_call_end|>" + SE,  # a (long) named call
        "<|tool_call_end|> after" + SE,  # a header ended by a marker that is not its own
    ],
)
def test_a_long_header_held_in_pieces_is_the_whole_header(gen: int, tail: str) -> None:
    """A header with no `<` for many pieces is held piece by piece and joined once (joining
    per piece was quadratic: 2M characters 53 ms, 4M 311 ms); the result is the whole text's."""
    text = SB + "<|tool_call_begin|>functions." + "a" * 50_000 + tail
    whole = parse(text, generation=gen, id_factory=counter_ids(), **LONG_KW)  # type: ignore[arg-type]
    for size in (1, 4, 997):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        streamed = stream(chunks, generation=gen, id_factory=counter_ids(), **LONG_KW)
        assert streamed == whole, size
    kept = (whole.content or "") + (whole.reasoning_content or "")
    assert "a" * 50_000 in kept + "".join(c.name for c in whole.tool_calls)
