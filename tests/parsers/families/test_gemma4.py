"""Gemma 4 (`gemma4`): call grammar, reasoning channel, V1 vs V2, streaming edge cases.

The shared property tests (chunking, lossless, quoted opener) run the samples in
tests/parsers/parser_samples/gemma4.py; this file holds the family's own cases.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import ParsedMessage, StreamParser, parse, stream
from parsers.ids import counter_ids
from parsers.types import Delta

G = "gemma4"
D = '<|"|>'
ROUTE = {1: "legacy_jail", 2: "parser_v2"}
GENS = pytest.mark.parametrize("gen", [1, 2])


def run(text: str, gen: int, **kw: Any) -> ParsedMessage:
    kw.setdefault("tool_parser", G)
    msg = parse(text, generation=gen, id_factory=counter_ids(), **kw)
    assert msg.route == ROUTE[gen]
    # every result is also what any chunking of the same text gives
    assert stream(list(text), generation=gen, id_factory=counter_ids(), **kw) == msg
    return msg


def calls(msg: ParsedMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in msg.tool_calls]


def call_text(args: str, name: str = "f") -> str:
    return f"<|tool_call>call:{name}{{{args}}}<tool_call|>"


# --- the contract example and the reasoning channel ------------------------------------------


@GENS
def test_spec_example(gen: int) -> None:
    text = (
        f"<|channel>thought\nstep<channel|><|tool_call>call:get_weather{{location:{D}Tokyo{D},"
        "count:42}<tool_call|>"
    )
    msg = run(text, gen, reasoning_parser=G, thinking=True)
    assert msg.reasoning_content == "step"
    assert msg.content is None
    assert calls(msg) == [("get_weather", {"location": "Tokyo", "count": 42})]
    assert msg.tool_calls[0].arguments == '{"location":"Tokyo","count":42}'
    assert msg.tool_calls[0].id == "call-0"
    assert msg.finish_reason == "tool_calls"


@GENS
def test_thought_channel_parsed_whatever_thinking_says(gen: int) -> None:
    text = f"<|channel>thought\nstep<channel|>Answer.{call_text('a:1')}"
    for thinking in (None, False, True):
        msg = run(text, gen, reasoning_parser=G, thinking=thinking)
        assert (msg.reasoning_content, msg.content) == ("step", "Answer.")
        assert calls(msg) == [("f", {"a": 1})]
    msg = run(text, gen, reasoning_parser=None)  # no reasoning parser: markers are markup
    assert (msg.reasoning_content, msg.content) == (None, "stepAnswer.")


@GENS
def test_reasoning_then_text_then_calls(gen: int) -> None:
    text = (
        "<|channel>thought\nPlan: two calls.\nDone<channel|>Sure, "
        f"{call_text(f'q:{D}a{D}', 'one')} then {call_text('', 'two')} bye"
    )
    msg = run(text, gen, reasoning_parser=G, thinking=True)
    assert msg.reasoning_content == "Plan: two calls.\nDone"
    assert msg.content == "Sure, then bye"  # blanks before a call start are its markup
    assert calls(msg) == [("one", {"q": "a"}), ("two", {})]


@GENS
def test_call_start_ends_unclosed_reasoning(gen: int) -> None:
    msg = run(f"<|channel>thought\nhmm {call_text('x:1')}", gen, reasoning_parser=G, thinking=True)
    assert (msg.reasoning_content, msg.content) == ("hmm", None)  # blanks go with the call
    assert calls(msg) == [("f", {"x": 1})]


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("<|channel>raw thoughts<channel|>answer", "raw thoughts", "answer"),  # no label
        ("<|channel>thought<channel|>answer", "thought", "answer"),  # no newline: no label
        ("<|channel>thought\n<channel|>answer", None, "answer"),
        ("<|channel>thoughtful<channel|>answer", "thoughtful", "answer"),  # not the label
        ("<|channel>thought\nunclosed to the end", "unclosed to the end", None),
        ("Intro. <|channel>thought\nmid<channel|> outro", "mid", "Intro.  outro"),
        ("<|channel>thought\nA<channel|><|channel>thought\nB<channel|>x", "AB", "x"),
        ("no markers at all", None, "no markers at all"),
        ("a stray close<channel|> is markup", None, "a stray close is markup"),
    ],
)
def test_channel_label_and_spans(
    gen: int, text: str, reasoning: str | None, content: str | None
) -> None:
    msg = run(text, gen, reasoning_parser=G, thinking=True)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_prefilled_prompt_starts_in_reasoning(gen: int) -> None:
    prompt = "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n<|channel>thought"
    msg = run("\nweighing it<channel|>The answer.", gen, reasoning_parser=G, prompt=prompt)
    assert (msg.reasoning_content, msg.content) == ("weighing it", "The answer.")
    # the whole label when it came with the output; nothing else is dropped
    msg = run("thought\nweighing<channel|>A.", gen, reasoning_parser=G, prompt=prompt)
    assert (msg.reasoning_content, msg.content) == ("weighing", "A.")
    msg = run("though<channel|>A.", gen, reasoning_parser=G, prompt=prompt)
    assert (msg.reasoning_content, msg.content) == ("though", "A.")


@GENS
def test_prefill_split_close_marker_then_call(gen: int) -> None:
    """Prompt prefilled the channel; `<channel|>` arrives split; the call after it is parsed."""
    prompt = "<start_of_turn>model\n<|channel>thought"
    chunks = ["\nI should look it up<", "channel|>", call_text(f"city:{D}Oslo{D}", "get_weather")]
    kw: dict[str, Any] = {"tool_parser": G, "reasoning_parser": G, "prompt": prompt}
    msg = stream(chunks, generation=gen, **kw)
    assert msg.route == ROUTE[gen]
    assert msg.reasoning_content == "I should look it up"
    assert (msg.content, calls(msg)) == (None, [("get_weather", {"city": "Oslo"})])


# --- the argument grammar ------------------------------------------------------------------


ARGS_CASES: list[tuple[str, str, Any]] = [
    ("string", f"location:{D}Paris, France{D}", {"location": "Paris, France"}),
    ("string-specials", f"x:{D}has,comma:and{{brace}}[]{D}", {"x": "has,comma:and{brace}[]"}),
    (
        "string-quotes-html",
        f'c:{D}<div class="a">{{x}}</div>{D}',
        {"c": '<div class="a">{x}</div>'},
    ),
    ("string-newlines", f"b:{D}line1\nline2\ttab \\ back{D}", {"b": "line1\nline2\ttab \\ back"}),
    ("string-empty", f"s:{D}{D}", {"s": ""}),
    ("non-ascii", f"city:{D}Zürich ☀ 東京{D}", {"city": "Zürich ☀ 東京"}),
    (
        "numbers",
        "a:-1,b:-2.5,c:0,d:0.0,e:3.14,f:1e-3,g:2.50,h:108.",
        {"a": -1, "b": -2.5, "c": 0, "d": 0.0, "e": 3.14, "f": 0.001, "g": 2.5, "h": 108.0},
    ),
    ("booleans", "t:true,f:false,T:True,F:FALSE", {"t": True, "f": False, "T": True, "F": False}),
    (
        "nulls-any-case",
        "a:null,b:NULL,c:None,d:none,e:nil,f:NIL,g:Nil",
        dict.fromkeys("abcdefg"),
    ),
    ("empty-value", "x:,y:1", {"x": "", "y": 1}),
    ("trailing-empty-value", "x:1,y:", {"x": 1, "y": ""}),
    (
        "nested",
        f"cfg:{{ssl:true,pool:{{min:5,max:20}},name:{D}db{D}}}",
        {"cfg": {"ssl": True, "pool": {"min": 5, "max": 20}, "name": "db"}},
    ),
    ("deep", "a:{b:{c:{d:{e:1}}}}", {"a": {"b": {"c": {"d": {"e": 1}}}}}),
    (
        "arrays",
        f"xs:[1,2,3.5,true,null,{D}s{D}],e:[],n:[[1],[]]",
        {"xs": [1, 2, 3.5, True, None, "s"], "e": [], "n": [[1], []]},
    ),
    (
        "array-of-objects",
        f"items:[{{n:{D}x{D}}},{{n:{D}y{D},k:[{D}a]b{D}]}}]",
        {"items": [{"n": "x"}, {"n": "y", "k": ["a]b"]}]},
    ),
    ("whitespace", f" x : 1 ,\n y : {D}z{D} ", {"x": 1, "y": "z"}),
    ("delimited-key", f"m:{{{D}3{D}:{D}new text{D}}}", {"m": {"3": "new text"}}),
    ("key-chars", "a.b-c_d9:1", {"a.b-c_d9": 1}),
    ("bare-word-is-string", "unit:celsius,city: New York", {"unit": "celsius", "city": "New York"}),
    ("trailing-comma", "a:1,", {"a": 1}),
    ("empty", "", {}),
]


@GENS
@pytest.mark.parametrize(
    ("args", "expected"), [c[1:] for c in ARGS_CASES], ids=[c[0] for c in ARGS_CASES]
)
def test_argument_grammar(gen: int, args: str, expected: Any) -> None:
    msg = run(call_text(args), gen)
    assert calls(msg) == [("f", expected)]
    assert msg.content is None


def test_arguments_are_canonical_json_text() -> None:
    msg = run(call_text(f's:{D}é "q"{D},n:[1, 2.50],o:{{}}'), 2)
    assert msg.tool_calls[0].arguments == '{"s":"é \\"q\\"","n":[1,2.50],"o":{}}'


@GENS
@pytest.mark.parametrize("name", ["get-weather", "weather.get", "mcp__portal__search-doc", "f9"])
def test_function_names(gen: int, name: str) -> None:
    assert calls(run(call_text("", name), gen)) == [(name, {})]


# --- several calls, text around, malformed and unterminated ---------------------------------


@GENS
def test_several_calls_and_text_around(gen: int) -> None:
    text = (
        f"Before. {call_text('x:1', 'a')}\nbetween\n{call_text(f'y:{D}two{D}', 'b')}"
        f"{call_text('', 'c')} after ☀"
    )
    msg = run(text, gen)
    assert calls(msg) == [("a", {"x": 1}), ("b", {"y": "two"}), ("c", {})]
    # blanks right before a call start are its markup; text after a call is kept whole
    assert msg.content == "Before.\nbetween after ☀"
    assert [c.id for c in msg.tool_calls] == ["call-0", "call-1", "call-2"]


def test_generated_ids_are_unique_call_uuids() -> None:
    msg = parse(call_text("", "a") + call_text("", "b"), tool_parser=G, generation=2)
    ids = [c.id for c in msg.tool_calls]
    assert len(set(ids)) == 2
    assert all(i.startswith("call-") and len(i) == len("call-") + 36 for i in ids)


MALFORMED = [
    "<|tool_call>call:f{garbage no colons here}<tool_call|>",
    "<|tool_call>hello<tool_call|>",
    "<|tool_call>call:get_weather<tool_call|>",  # no braces
    "<|tool_call>call:{}<tool_call|>",  # no name
    "<|tool_call>call:f{x}<tool_call|>",  # key without colon
    "<|tool_call>call:f{]}<tool_call|>",
]


@GENS
@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_call_is_content_verbatim(gen: int, bad: str) -> None:
    text = f"Text {bad} more"
    msg = run(text, gen)
    assert (msg.content, msg.tool_calls, msg.finish_reason) == (text, [], "stop")


@GENS
def test_malformed_then_good_call(gen: int) -> None:
    bad = "<|tool_call>call:f{garbage}<tool_call|>"
    msg = run(f"{bad} ok {call_text('a:1', 'g')}", gen)
    assert calls(msg) == [("g", {"a": 1})]
    assert msg.content == f"{bad} ok"


@GENS
@pytest.mark.parametrize("reason", ["stop", "length"])
@pytest.mark.parametrize(
    "tail",
    [
        "<|tool_call>",
        "<|tool_call>call:get_wea",
        "<|tool_call>call:get_weather{",
        "<|tool_call>call:f{loc",
    ],
)
def test_unterminated_call_before_first_key_is_content(gen: int, reason: str, tail: str) -> None:
    text = f"Let me look. {tail}"
    msg = parse(text, tool_parser=G, generation=gen, finish_reason=reason)
    assert (msg.content, msg.tool_calls, msg.finish_reason) == (text, [], reason)


def test_unterminated_call_v1_is_content() -> None:
    text = f"Sure {call_text(f'location:{D}London')[: -len('}<tool_call|>')]}"
    msg = run(text, 1)
    assert (msg.content, msg.tool_calls) == (text, [])


def test_unterminated_call_v2_is_closed_after_streaming_began() -> None:
    """V2 streamed the call already (early delivery): it stays, never repaired."""
    text = f"Sure <|tool_call>call:get_weather{{location:{D}Lon"
    msg = run(text, 2)
    assert msg.content == "Sure"
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("get_weather", '{"location":"Lon')]


def test_malformed_after_first_key_v2_closes_call_and_keeps_the_rest() -> None:
    text = "<|tool_call>call:f{a:1,b:<|tool_call>call:g{}<tool_call|>"
    v2 = run(text, 2)  # `f` went out: never repaired, its arguments as streamed
    assert [(c.name, c.arguments) for c in v2.tool_calls] == [("f", '{"a":1'), ("g", "{}")]
    v1 = run(text, 1)  # the jail reads to the first end marker and finds no complete call
    assert (v1.content, v1.tool_calls) == (text, [])


def test_string_may_contain_markers_v2_reads_it_v1_jail_stops_early() -> None:
    text = f"{call_text(f'body:{D}a <tool_call|> b <|tool_call> c{D}', 'w')}after"
    v2 = run(text, 2)
    assert calls(v2) == [("w", {"body": "a <tool_call|> b <|tool_call> c"})]
    assert v2.content == "after"
    v1 = run(text, 1)
    assert (v1.content, v1.tool_calls) == (text, [])


@GENS
def test_end_of_turn_token_closes_a_complete_call(gen: int) -> None:
    text = f"<|tool_call>call:gdb{{args:{D}-batch -ex run{D}}}<turn|>"
    msg = run(text, gen)
    assert (msg.content, calls(msg)) == (None, [("gdb", {"args": "-batch -ex run"})])
    # inside a string it is text to V2; the V1 jail (not string-aware) ends there
    inner = call_text(f"a:{D}x<turn|>y{D}")
    msg = run(inner, gen)
    if gen == 2:
        assert msg.tool_calls[0].arguments == '{"a":"x<turn|>y"}'
    else:
        assert (msg.content, msg.tool_calls) == (inner, [])


# --- request policy -------------------------------------------------------------------------


@GENS
def test_tool_choice_none(gen: int) -> None:
    text = f"Hi {call_text('a:1')}"
    msg = run(text, gen, tool_choice="none")
    assert (msg.tool_calls, msg.finish_reason) == ([], "stop")
    # V2 strips the call markup; V1 does no tool parsing at all
    assert msg.content == ("Hi" if gen == 2 else text)


@GENS
def test_named_tool_choice_drops_other_tools(gen: int) -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("f", "g")]
    choice = {"type": "function", "function": {"name": "f"}}
    msg = run(call_text("", "g") + call_text("x:1", "f"), gen, tools=tools, tool_choice=choice)
    assert calls(msg) == [("f", {"x": 1})]
    assert msg.tool_calls[0].id == "call-0"


@GENS
def test_required_accepts_guided_json(gen: int) -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    msg = run('[{"name": "f", "arguments": {"x": 1}}]', gen, tools=tools, tool_choice="required")
    assert calls(msg) == [("f", {"x": 1})]


# --- streaming: V1 vs V2, split tokens -------------------------------------------------------


def deltas(text: list[str], gen: int, **kw: Any) -> list[list[Delta]]:
    p = StreamParser(tool_parser=G, generation=gen, id_factory=counter_ids(), **kw)
    out = [p.feed(c) for c in text]
    out.append(p.finish())
    return out


def test_v2_streams_arguments_before_the_call_ends_v1_emits_it_whole() -> None:
    text = f"Hi {call_text(f'city:{D}Paris, France{D},days:3', 'get_weather')}"
    end = text.index("<tool_call|>")
    chunks = list(text)
    v2 = deltas(chunks, 2)
    fragments = [
        (i, tc.arguments)
        for i, ds in enumerate(v2)
        for d in ds
        for tc in d.tool_calls
        if tc.arguments
    ]
    assert len(fragments) > 3
    assert fragments[0][0] < end  # arguments went out before the end marker arrived
    heads = [i for i, ds in enumerate(v2) for d in ds for tc in d.tool_calls if tc.name]
    # id and name once the first `key:` shows it is a call
    assert heads == [text.index("city:") + len("city")]
    streamed = "".join(a for _, a in fragments)
    assert json.loads(streamed) == {"city": "Paris, France", "days": 3}

    v1 = deltas(chunks, 1)
    v1_calls = [(i, tc) for i, ds in enumerate(v1) for d in ds for tc in d.tool_calls]
    assert len(v1_calls) == 1
    i, tc = v1_calls[0]
    assert i >= end + len("<tool_call|>") - 1  # only once the call is complete
    assert (tc.id, tc.name, tc.arguments) == ("call-0", "get_weather", streamed)


def streamed_prefixes(chunks: list[str], gen: int = 2) -> tuple[list[str], str]:
    args = ""
    prefixes = []
    for ds in deltas(chunks, gen):
        for d in ds:
            for tc in d.tool_calls:
                if tc.arguments:
                    args += tc.arguments
                    prefixes.append(args)
    return prefixes, args


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (["<|tool_call>call:s{input:{all:tru", "e}}<tool_call|>"], {"input": {"all": True}}),
        (["<|tool_call>call:s{flag:fals", "e}<tool_call|>"], {"flag": False}),
        (["<|tool_call>call:s{x:3.", "5,y:1}<tool_call|>"], {"x": 3.5, "y": 1}),
        (
            ["<|tool_call>call:s{left:108.", "2,right:2", "2.8}<tool_call|>"],
            {"left": 108.2, "right": 22.8},
        ),
        (["<|tool_call>call:s{n:nu", "ll}<tool_call|>"], {"n": None}),
        (["<|tool_call>call:s{c:4", "2}<tool_call|>"], {"c": 42}),
    ],
)
def test_values_split_mid_token(chunks: list[str], expected: Any) -> None:
    prefixes, final = streamed_prefixes(chunks)
    assert json.loads(final) == expected
    for p in prefixes:
        assert final.startswith(p)
    assert "tru" not in final.replace("true", "")


def test_string_delimiter_split_at_every_position() -> None:
    text = f'<|tool_call>call:todo{{content:{D}Buy <milk> |"{D},n:1}}<tool_call|>'
    whole = parse(text, tool_parser=G, generation=2, id_factory=counter_ids())
    assert calls(whole) == [("todo", {"content": 'Buy <milk> |"', "n": 1})]
    for i in range(len(text) + 1):
        prefixes, final = streamed_prefixes([text[:i], text[i:]])
        assert final == whole.tool_calls[0].arguments
        assert all(final.startswith(p) for p in prefixes)
        assert "<|" not in final


def test_string_text_streams_as_it_arrives() -> None:
    head = f"<|tool_call>call:w{{path:{D}a.html{D},body:{D}<!DOCTYPE html>\n<"
    chunks = [head, 'html lang="en">\n<', "head>", f"{D}}}<tool_call|>"]
    out = deltas(chunks, 2)
    seen = "".join(tc.arguments or "" for d in out[0] for tc in d.tool_calls)
    assert seen == '{"path":"a.html","body":"<!DOCTYPE html>\\n'  # `<` held: maybe a delimiter
    seen += "".join(tc.arguments or "" for d in out[1] for tc in d.tool_calls)
    assert seen.endswith('<html lang=\\"en\\">\\n')


# --- lossless with reasoning (thinking on), both generations --------------------------------

PROSE = st.text(alphabet="abcXYZ <>/|=é☀{}[]:,.!?\n-_0123", min_size=1, max_size=10).filter(
    str.strip
)
PIECES = [
    (
        f"<|tool_call>call:get_weather{{city:{D}Zürich{D},n:2}}<tool_call|>",
        ("get_weather", {"city": "Zürich", "n": 2}),
    ),
    ("<|tool_call>call:noop{}<tool_call|>", ("noop", {})),
]


@GENS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_lossless_with_reasoning(gen: int, data: st.DataObject) -> None:
    text, content, reasoning, expected = [], [], [], []
    last = ""
    for kind in data.draw(st.lists(st.sampled_from(["prose", "call", "think"]), max_size=8)):
        if kind == "prose":
            p = data.draw(PROSE)
            text.append(p)
            content.append(p)
        elif kind == "call" and last == "prose":
            content[-1] = content[-1].rstrip(" \t\r\n")  # blanks before a call are markup
        elif kind == "think":
            p = data.draw(PROSE)
            text.append(f"<|channel>thought\n{p}<channel|>")
            reasoning.append(p)
        if kind == "call":
            markup, call = data.draw(st.sampled_from(PIECES))
            text.append(markup)
            expected.append(call)
        last = kind
    whole = "".join(text)
    msg = parse(whole, tool_parser=G, reasoning_parser=G, thinking=True, generation=gen)
    assert msg.route == ROUTE[gen]
    assert (msg.content or "", msg.reasoning_content or "") == (
        "".join(content),
        "".join(reasoning),
    )
    assert calls(msg) == expected
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(whole)), max_size=8), label="cuts")))
    bounds = [0, *cuts, len(whole)]
    chunks = [whole[x:y] for x, y in itertools.pairwise(bounds)]
    kw: dict[str, Any] = {"tool_parser": G, "reasoning_parser": G, "thinking": True}
    assert stream(chunks, generation=gen, **kw).content == msg.content
    assert stream(chunks, generation=gen, **kw).reasoning_content == msg.reasoning_content


@GENS
def test_every_truncation_gives_a_prefix_of_the_arguments(gen: int) -> None:
    """Output cut anywhere (length finish): a call that went out has a prefix of the whole
    call's arguments (never repaired, never invented); V1 only complete calls."""
    text = (
        f"Hi <|tool_call>call:f{{a:1,b:{D}x,y{D},c:[1,{{d:true}},[{D}q{D},2.5]],e:{{}},"
        "g:nil,h:}<tool_call|> bye"
    )
    whole = parse(text, tool_parser=G, generation=gen).tool_calls[0].arguments
    json.loads(whole)
    for k in range(len(text) + 1):
        msg = parse(text[:k], tool_parser=G, generation=gen, finish_reason="length")
        for call in msg.tool_calls:
            assert whole.startswith(call.arguments)
        if gen == 1 and "<tool_call|>" not in text[:k]:
            # V1: an unfinished call is content (a marker cut at the very end is markup)
            content = msg.content or ""
            assert text[:k].startswith(content) and k - len(content) < len("<|tool_call>")


SOUP = [
    *("<|tool_call>", "call:", "f", "{", "}", "[", "]", ":", ",", D, '<|"', "|>", "<tool_call|>"),
    *("<turn|>", "<|channel>", "thought\n", "<channel|>", "true", "nil", "3.", "5", " ", "\n"),
    *("a", "x y", '"', "'", "`", "<", "é"),
]


@GENS
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_token_soup_is_chunk_invariant_with_valid_arguments(gen: int, data: st.DataObject) -> None:
    """Random mixes of markers and fragments: no error, valid JSON, any chunking agrees."""
    text = "".join(data.draw(st.lists(st.sampled_from(SOUP), min_size=1, max_size=25)))
    kw: dict[str, Any] = {"tool_parser": G, "reasoning_parser": G, "generation": gen}
    kw["thinking"] = data.draw(st.sampled_from([True, None]))
    msg = parse(text, id_factory=counter_ids(), **kw)
    for call in msg.tool_calls:
        json.loads(call.arguments)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=6))))
    chunks = [text[x:y] for x, y in itertools.pairwise([0, *cuts, len(text)])]
    assert stream(chunks, id_factory=counter_ids(), **kw) == msg
