"""Muse (`muse`, alias `muse_glimmer`; V2 only): messages, recipients, ATEM calls.

The shared property tests (chunking, lossless, quoted opener) run the samples in
tests/parsers/parser_samples/muse.py; this file holds the family's own cases. Every result
is checked against a character-by-character stream of the same text.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import ConfigError, ParsedMessage, StreamParser, parse, stream
from parsers.ids import counter_ids

M = "muse"
WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


def run(text: str, **kw: Any) -> ParsedMessage:
    kw.setdefault("tool_parser", M)
    kw.setdefault("reasoning_parser", M)
    msg = parse(text, id_factory=counter_ids(), **kw)
    assert msg.route == "parser_v2"
    assert stream(list(text), id_factory=counter_ids(), **kw) == msg
    return msg


def calls(msg: ParsedMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in msg.tool_calls]


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in params.items())
    return f'<atem:invoke name="{name}">\n{body}</atem:invoke>\n'


def tool_msg(recipient: str, *invokes: str, end: str = "<|eom|>") -> str:
    return (
        f"<|start|>assistant to={recipient}<|message|><atem:function_calls>\n"
        + "".join(invokes)
        + "</atem:function_calls>"
        + end
    )


SPEC = (
    " to=self<|message|>Look it up.<|eom|><|start|>assistant to=get_weather<|message|>"
    '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="location">Paris</atem:parameter>\n</atem:invoke>\n'
    "</atem:function_calls><|eom|><|start|>assistant to=user<|message|>It's 18C.<|eot|>"
)


@pytest.mark.parametrize("name", ["muse", "muse_glimmer", "MUSE-Glimmer"])
def test_spec_example(name: str) -> None:
    msg = run(SPEC, tool_parser=name, reasoning_parser="muse")
    assert msg.reasoning_content == "Look it up."
    assert calls(msg) == [("get_weather", {"location": "Paris"})]
    assert msg.content == "It's 18C."
    assert msg.tool_calls[0].id == "call-0"
    assert msg.finish_reason == "tool_calls"


def test_default_generation_is_v2_and_v1_is_refused() -> None:
    assert parse(SPEC, tool_parser=M).route == "parser_v2"
    with pytest.raises(ConfigError, match="generation 2 only"):
        parse(SPEC, tool_parser=M, generation=1)


def test_generated_ids_are_unique_call_uuids() -> None:
    msg = parse(tool_msg("a", invoke("a"), invoke("b")), tool_parser=M)
    ids = [c.id for c in msg.tool_calls]
    assert len(set(ids)) == 2
    assert all(i.startswith("call-") and len(i) == len("call-") + 36 for i in ids)


# --- framing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("Just a direct answer.", None, "Just a direct answer."),  # no header at all
        (" to=user<|message|>Hi.<|eot|>", None, "Hi."),
        ("to=user<|message|>Hi.", None, "Hi."),  # no leading blank, no <|eot|>
        ("<|start|>assistant to=user<|message|>Hi.", None, "Hi."),  # full form first
        (" to=self<|message|>cut off", "cut off", None),  # truncated reasoning
        ("<|message|>untagged", None, "untagged"),  # no recipient: content
        (" to=self<|message|>a<|eom|><|start|>assistant to=self<|message|>b<|eom|>", "ab", None),
        (" to=user<|message|>one<|eom|>two", None, "onetwo"),  # text after a message
        ("Intro <|start|>assistant to=user<|message|>Hi<|eot|>", None, "Intro Hi"),
        (" to=user<|message|>Hi<|eot|>\n\n", None, "Hi"),  # blanks after the turn: layout
        (" to=user<|message|>Hi<|eom|>\n<|start|>assistant to=user<|message|>!", None, "Hi!"),
        # a header without <|message|> is text
        (
            "<|start|>assistant to=x<|start|>assistant to=user<|message|>ok",
            None,
            "<|start|>assistant to=xok",
        ),
        (
            " to=self<|message|>日本語 ☀<|eom|><|start|>assistant to=user<|message|>Ça va.",
            "日本語 ☀",
            "Ça va.",
        ),
    ],
)
def test_messages_and_recipients(text: str, reasoning: str | None, content: str | None) -> None:
    msg = run(text)
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == (reasoning, content, [])


def test_unclosed_reasoning_ended_by_the_next_header() -> None:
    text = " to=self<|message|>thinking<|start|>assistant to=f<|message|>" + invoke("f", a="1")
    msg = run(text)
    assert (msg.reasoning_content, msg.content) == ("thinking", None)
    assert calls(msg) == [("f", {"a": 1})]


def test_missing_eom_before_a_bare_tool_header() -> None:
    """The model sometimes drops <|eom|> and writes ` to=NAME<|message|>` inside a body."""
    text = " to=self<|message|>I will call it. to=f<|message|>" + invoke("f", x="true")
    msg = run(text)
    assert msg.reasoning_content == "I will call it."
    assert calls(msg) == [("f", {"x": True})]


def test_word_ending_in_to_is_not_a_header() -> None:
    msg = run(" to=user<|message|>intro=x<|message|> go to")
    assert msg.content == "intro=x go to"  # `intro=x` is no `to=` header; bare <|message|>


def test_reasoning_then_several_calls_then_answer() -> None:
    text = (
        " to=self<|message|>need two calls<|eom|>"
        + tool_msg("math.add", invoke("math.add", a="1", b="2"))
        + tool_msg("math.mul", invoke("math.mul", a="3", b="4"), invoke("math.neg", a="-5"))
        + "<|start|>assistant to=user<|message|>Computing.<|eot|>"
    )
    msg = run(text)
    assert msg.reasoning_content == "need two calls"
    assert calls(msg) == [
        ("math.add", {"a": 1, "b": 2}),
        ("math.mul", {"a": 3, "b": 4}),
        ("math.neg", {"a": -5}),
    ]
    assert msg.content == "Computing."


def test_text_before_between_and_after_calls() -> None:
    text = (
        "To be sure \n"
        + tool_msg("a", invoke("a"))
        + "in between "
        + tool_msg("b", invoke("b"), end="")
        + "<|start|>assistant to=user<|message|>after.<|eot|>"
    )
    msg = run(text)
    # blanks right before a tool message are its layout (as before calls in other families)
    assert msg.content == "To be surein betweenafter."
    assert calls(msg) == [("a", {}), ("b", {})]


def test_calls_only_from_tool_channels() -> None:
    atem = invoke("evil", x="1")
    text = (
        f" to=self<|message|>I could {atem} but no.<|eom|>"
        f"<|start|>assistant to=user<|message|>Quoting {atem} here.<|eot|>"
    )
    msg = run(text)
    assert msg.tool_calls == []
    assert msg.reasoning_content == f"I could {atem} but no."
    assert msg.content == f"Quoting {atem} here."


def test_quoted_header_in_an_answer_is_text() -> None:
    text = ' to=user<|message|>The header "to=self<|message|>" and `<|start|>` are markup.<|eot|>'
    msg = run(text)
    assert msg.content == 'The header "to=self<|message|>" and `<|start|>` are markup.'


def test_end_markers_always_end_a_message() -> None:
    """A stray quote cannot make <|eom|>/<|eot|> text and swallow the rest of the turn."""
    text = ' to=self<|message|>He said "hi<|eom|>' + tool_msg("f", invoke("f"))
    msg = run(text)
    assert msg.reasoning_content == 'He said "hi'
    assert calls(msg) == [("f", {})]


# --- ATEM values and names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("Paris", "Paris"),
        (" New York ", " New York "),  # raw strings are kept untrimmed
        ("42", 42),
        ("-0.5", -0.5),
        ("2.50", 2.5),
        ("1e-3", 0.001),
        ("true", True),
        ("null", None),
        ('"quoted"', "quoted"),
        ('{"nested": [1, {"a": null}], "é": "☀"}', {"nested": [1, {"a": None}], "é": "☀"}),
        ("[1, 2", "[1, 2"),  # not JSON: the raw string
        ("NaN", "NaN"),
        ("", ""),
        ("line1\nline2 <b>x</b>", "line1\nline2 <b>x</b>"),
        ("Zürich 東京", "Zürich 東京"),
    ],
)
def test_values_json_when_they_parse(raw: str, value: Any) -> None:
    msg = run(tool_msg("f", invoke("f", v=raw)))
    assert calls(msg) == [("f", {"v": value})]


def test_arguments_are_canonical_json_text() -> None:
    msg = run(tool_msg("f", invoke("f", a='{"x": [1, 2.50]}', b="é")))
    assert msg.tool_calls[0].arguments == '{"a":{"x":[1,2.50]},"b":"é"}'


def test_empty_arguments_and_no_wrapper() -> None:
    text = '<|start|>assistant to=f<|message|><atem:invoke name="f"></atem:invoke><|eom|>'
    assert calls(run(text)) == [("f", {})]


@pytest.mark.parametrize(
    ("emitted", "tools", "expected"),
    [
        ("get_weather.get_weather", ["get_weather"], "get_weather"),  # doubled: collapsed
        ("get_weather", ["get_weather"], "get_weather"),
        ("weather.get", ["weather.get"], "weather.get"),  # namespaced and declared: kept
        ("get_weather.get_weather", [], "get_weather.get_weather"),  # nothing declared
        ("x.x", ["get_weather"], "x.x"),  # doubled but not declared
        ("foo.get_weather", ["get_weather"], "foo.get_weather"),  # only doubles collapse
    ],
)
def test_tool_name_normalization(emitted: str, tools: list[str], expected: str) -> None:
    decl = [{"type": "function", "function": {"name": n}} for n in tools]
    msg = run(tool_msg(emitted, invoke(emitted, city="Paris")), tools=decl or None)
    assert calls(msg) == [(expected, {"city": "Paris"})]


# --- malformed and unterminated ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '<atem:invoke name="f"><junk/></atem:invoke>',
        '<atem:invoke name="f">text</atem:invoke>',
        "<atem:invoke>no name</atem:invoke>",
        '<atem:invoke name="f">',  # unterminated before any parameter
    ],
)
def test_malformed_invoke_is_content_verbatim(body: str) -> None:
    msg = run(f"<|start|>assistant to=f<|message|>{body}<|eot|>")
    assert (msg.content, msg.tool_calls, msg.finish_reason) == (body, [], "stop")


def test_malformed_invoke_does_not_swallow_the_next() -> None:
    bad = '<atem:invoke name="f"><junk/>'
    msg = run(f"<|start|>assistant to=f<|message|>{bad}{invoke('g', a='1')}<|eom|>")
    assert calls(msg) == [("g", {"a": 1})]
    assert msg.content == bad


def test_unterminated_invoke_after_a_parameter_is_closed() -> None:
    """V2 streamed the call already (early delivery): it stays, never repaired."""
    text = '<|start|>assistant to=f<|message|><atem:invoke name="f"><atem:parameter name="q">ab'
    for reason in ("stop", "length"):
        msg = parse(text, tool_parser=M, finish_reason=reason, id_factory=counter_ids())
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("f", '{"q":"ab')]
        assert msg.content is None
        assert msg.finish_reason == ("length" if reason == "length" else "tool_calls")
        chars = stream(list(text), tool_parser=M, finish_reason=reason, id_factory=counter_ids())
        assert chars == msg


def test_complete_invokes_kept_when_block_close_is_missing() -> None:
    text = "<|start|>assistant to=a<|message|><atem:function_calls>" + invoke("a", x="1")
    assert calls(run(text)) == [("a", {"x": 1})]


# --- request policy -----------------------------------------------------------------------------


def test_thinking_off_still_parses_self_messages() -> None:
    msg = run(SPEC, thinking=False)
    assert (msg.reasoning_content, msg.content) == ("Look it up.", "It's 18C.")
    assert calls(msg) == [("get_weather", {"location": "Paris"})]


def test_no_reasoning_parser_self_messages_are_content() -> None:
    msg = run(SPEC, reasoning_parser=None)
    assert msg.reasoning_content is None
    assert msg.content == "Look it up.It's 18C."
    assert calls(msg) == [("get_weather", {"location": "Paris"})]


def test_prefilled_self_header_starts_in_reasoning() -> None:
    prompt = "<|start|>user<|message|>hi<|eot|><|start|>assistant to=self<|message|>"
    msg = run("Plan.<|eom|><|start|>assistant to=user<|message|>Done.<|eot|>", prompt=prompt)
    assert (msg.reasoning_content, msg.content) == ("Plan.", "Done.")


def test_json_response_format_means_no_tool_parsing() -> None:
    body = invoke("f", a="1")
    text = f" to=self<|message|>hm<|eom|><|start|>assistant to=f<|message|>{body}<|eot|>"
    msg = run(text, request={"response_format": {"type": "json_object"}})
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == ("hm", body, [])


def test_tool_choice_none_drops_calls() -> None:
    msg = run(SPEC, tools=WEATHER, tool_choice="none")
    assert (msg.tool_calls, msg.finish_reason) == ([], "stop")
    assert (msg.reasoning_content, msg.content) == ("Look it up.", "It's 18C.")


def test_named_tool_choice_keeps_only_that_tool() -> None:
    tools = [*WEATHER, {"type": "function", "function": {"name": "other"}}]
    text = tool_msg("other", invoke("other"), invoke("get_weather", location="Oslo"))
    choice = {"type": "function", "function": {"name": "get_weather"}}
    msg = run(text, tools=tools, tool_choice=choice)
    assert calls(msg) == [("get_weather", {"location": "Oslo"})]


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ('[{"name": "get_weather", "arguments": {"location": "Oslo"}}]', "required"),
        ('{"location": "Oslo"}', {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_forced_choice_accepts_guided_json(text: str, choice: Any) -> None:
    msg = run(text, tools=WEATHER, tool_choice=choice)
    assert calls(msg) == [("get_weather", {"location": "Oslo"})]
    assert msg.finish_reason == "tool_calls"


def test_forced_choice_guided_json_after_reasoning() -> None:
    text = ' to=self<|message|>Oslo it is.<|eom|>[{"name": "get_weather", "parameters": {}}]'
    msg = run(text, tools=WEATHER, tool_choice="required")
    assert msg.reasoning_content == "Oslo it is."
    assert (msg.content, calls(msg)) == (None, [("get_weather", {})])


def test_forced_choice_not_json_is_text() -> None:
    msg = run("[not json", tools=WEATHER, tool_choice="required")
    assert (msg.content, msg.tool_calls, msg.finish_reason) == ("[not json", [], "stop")


def test_forced_choice_accepts_native_markup() -> None:
    msg = run(SPEC, tools=WEATHER, tool_choice="required")
    assert calls(msg) == [("get_weather", {"location": "Paris"})]


# --- streaming ----------------------------------------------------------------------------------


def test_string_value_streams_before_the_parameter_closes() -> None:
    head = '<|start|>assistant to=f<|message|><atem:invoke name="f"><atem:parameter name="s">'
    p = StreamParser(tool_parser=M, id_factory=counter_ids())
    first = p.feed(head + "Hello wor")
    heads = [(tc.id, tc.name) for d in first for tc in d.tool_calls if tc.name]
    assert heads == [("call-0", "f")]
    assert "".join(tc.arguments or "" for d in first for tc in d.tool_calls) == '{"s":"Hello wor'
    rest = p.feed('ld</atem:parameter><atem:parameter name="n">4') + p.feed("2</atem:parameter>")
    args = "".join(tc.arguments or "" for d in first + rest for tc in d.tool_calls)
    assert args == '{"s":"Hello world","n":42'  # the number only once complete
    end = p.feed("</atem:invoke><|eom|>") + p.finish()
    args += "".join(tc.arguments or "" for d in end for tc in d.tool_calls)
    assert json.loads(args) == {"s": "Hello world", "n": 42}


def test_framing_never_leaks_at_any_split() -> None:
    framing = ["<|start|>", "<|message|>", "<|eom|>", "<|eot|>", "to=self", "to=user", "<atem:"]
    for i in range(len(SPEC) + 1):
        msg = stream([SPEC[:i], SPEC[i:]], tool_parser=M, reasoning_parser=M)
        for f in framing:
            assert f not in (msg.content or "") and f not in (msg.reasoning_content or "")
        assert calls(msg) == [("get_weather", {"location": "Paris"})]


def test_every_truncation_gives_a_prefix_of_the_arguments() -> None:
    """Output cut anywhere (length finish): a call that went out has a prefix of the whole
    call's arguments (never repaired, never invented)."""
    whole = parse(SPEC, tool_parser=M, reasoning_parser=M).tool_calls[0].arguments
    assert json.loads(whole) == {"location": "Paris"}
    for k in range(len(SPEC) + 1):
        msg = parse(SPEC[:k], tool_parser=M, reasoning_parser=M, finish_reason="length")
        for call in msg.tool_calls:
            assert whole.startswith(call.arguments)


SOUP = [
    *("<|start|>", "assistant", " to=", "to=", "self", "user", "f", "f.f", "<|message|>"),
    *("<|eom|>", "<|eot|>", "<atem:function_calls>", "</atem:function_calls>"),
    *('<atem:invoke name="f">', "</atem:invoke>", '<atem:parameter name="k">'),
    *("</atem:parameter>", "42", '{"a": [1]}', " ", "\n", "hi", '"', "'", "`", "<", "é", "<|"),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_token_soup_is_chunk_invariant_with_valid_arguments(data: st.DataObject) -> None:
    """Random mixes of markers and fragments: no error, valid JSON, any chunking agrees."""
    text = "".join(data.draw(st.lists(st.sampled_from(SOUP), min_size=1, max_size=25)))
    kw: dict[str, Any] = {"tool_parser": M, "reasoning_parser": M, "tools": WEATHER}
    msg = parse(text, id_factory=counter_ids(), **kw)
    for call in msg.tool_calls:
        json.loads(call.arguments)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=6))))
    chunks = [text[x:y] for x, y in itertools.pairwise([0, *cuts, len(text)])]
    assert stream(chunks, id_factory=counter_ids(), **kw) == msg
