"""Conformance: Gemma 4 (`gemma4`, tool and reasoning parser), cases ported from other
implementations' test suites.

Sources (cited per test):
- vLLM tests/tool_parsers/test_gemma4_tool_parser.py              [vllm]
- vLLM tests/tool_parsers/test_gemma4_regex_and_bare_calls.py     [vllm-regex]
- vLLM tests/reasoning/test_gemma4_reasoning_parser.py            [vllm-reasoning]
- vLLM tests/reasoning/test_gemma4_reasoning_with_tool_call.py    [vllm-reasoning-tool]
- vLLM tests/parser/engine/test_gemma4_streaming_reasoning.py     [vllm-engine]
- Dynamo lib/parsers/src/tool_calling/gemma4/parser.rs tests      [dynamo]

Each case runs batch and streaming (character by character and a 3-way split, via
`parser_check.run`) in both generations.

Adaptations (our contract decides differently; docs/parsers.md):
- BLANKS: whitespace right before a call is markup (docs/parsers.md GLM example; docs "Blanks around
  calls"): Dynamo's `"Sure thing.  All set."` is `"Sure thing. All set."` here.
- CUT: "A call without `<tool_call|>` at the end of output is returned as content" (docs/parsers.md
  Gemma 4) holds for V1; V2 has streamed the call once its first `key:` arrived (principle 4)
  and closes it instead (docs/parsers.md, Gemma 4).
- BARE: calls need `<|tool_call>` (docs/parsers.md Gemma 4 grammar); vLLM's offline fallback also
  reads a bare `call:NAME{…}` in prose. Here that text is content.
- STRAY: a `<channel|>` without an opener is content (lossless, docs/parsers.md principle 1; the
  stream cannot know in advance that earlier text was reasoning). vLLM's batch parser makes
  the text before it reasoning, its streaming parser drops the marker.
- KEEP: end-of-turn text (`<turn|>`) in content is kept (principle 1); vLLM drops it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_check import run

from parsers import StreamParser, stream
from parsers.ids import counter_ids

Q = '<|"|>'
T = {"tool_parser": "gemma4"}
R = {"tool_parser": "gemma4", "reasoning_parser": "gemma4", "thinking": True}
GENS = pytest.mark.parametrize("gen", [1, 2])


def gcall(name: str, args: str) -> str:
    return f"<|tool_call>call:{name}{{{args}}}<tool_call|>"


def args_of(msg: Any) -> list[Any]:
    return [json.loads(c.arguments) for c in msg.tool_calls]


def streamed_args(chunks: list[str], gen: int, **kw: Any) -> str:
    p = StreamParser(generation=gen, id_factory=counter_ids(), **kw)
    got = [d for c in chunks for d in p.feed(c)] + p.finish()
    return "".join(c.arguments or "" for d in got for c in d.tool_calls)


# --- [vllm] _parse_gemma4_args cases, through a whole call ----------------------------------


@GENS
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (f"location:{Q}Paris{Q}", {"location": "Paris"}),
        (f"location:{Q}Paris, France{Q}", {"location": "Paris, France"}),
        (
            f"location:{Q}San Francisco{Q},unit:{Q}celsius{Q}",
            {"location": "San Francisco", "unit": "celsius"},
        ),
        ("count:42", {"count": 42}),
        ("score:3.14", {"score": 3.14}),
        ("flag:true", {"flag": True}),
        ("flag:false", {"flag": False}),
        ("param:null", {"param": None}),
        (
            f"name:{Q}test{Q},count:42,active:true,score:3.14",
            {"name": "test", "count": 42, "active": True, "score": 3.14},
        ),
        (f"nested:{{inner:{Q}value{Q}}}", {"nested": {"inner": "value"}}),
        (f"record_map:{{{Q}3{Q}:{Q}new text{Q}}}", {"record_map": {"3": "new text"}}),
        (f"outer:{{inner:{{{Q}3{Q}:{Q}new text{Q}}}}}", {"outer": {"inner": {"3": "new text"}}}),
        (f"items:[{Q}a{Q},{Q}b{Q}]", {"items": ["a", "b"]}),
        ("key:", {"key": ""}),
        ("left:108.,right:22.8", {"left": 108.0, "right": 22.8}),
        ("a:[42,true,3.14]", {"a": [42, True, 3.14]}),
        (f"a:[[{Q}a]b{Q},{Q}c{Q}],{Q}tail{Q}]", {"a": [["a]b", "c"], "tail"]}),
        ("", {}),
    ],
)
def test_vllm_args_grammar(gen: int, args: str, expected: dict[str, Any]) -> None:
    msg = run(gcall("f", args), gen, **T)
    assert (msg.content, args_of(msg)) == (None, [expected])


# --- [vllm] extract_tool_calls ----------------------------------------------------------------


@GENS
def test_vllm_no_tool_calls(gen: int) -> None:
    msg = run("Hello, how can I help you today?", gen, **T)
    assert (msg.content, msg.tool_calls) == ("Hello, how can I help you today?", [])


@GENS
@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        (
            gcall("get_weather", f"location:{Q}London{Q}"),
            [("get_weather", {"location": "London"})],
            None,
        ),
        (
            "Let me check the weather for you. " + gcall("get_weather", f"location:{Q}Paris{Q}"),
            [("get_weather", {"location": "Paris"})],
            "Let me check the weather for you.",
        ),
        (
            gcall("get_weather", f"location:{Q}London{Q}")
            + gcall("get_time", f"location:{Q}London{Q}"),
            [("get_weather", {"location": "London"}), ("get_time", {"location": "London"})],
            None,
        ),
        (
            gcall("complex_function", f"nested:{{inner:{Q}value{Q}}},list:[{Q}a{Q},{Q}b{Q}]"),
            [("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})],
            None,
        ),
        (
            gcall("set_status", "is_active:true,count:42,score:3.14"),
            [("set_status", {"is_active": True, "count": 42, "score": 3.14})],
            None,
        ),
        (
            gcall("get-weather", f"location:{Q}London{Q}"),
            [("get-weather", {"location": "London"})],
            None,
        ),
        (
            gcall("weather.get", f"location:{Q}London{Q}"),
            [("weather.get", {"location": "London"})],
            None,
        ),
        ("<|tool_call>call:get_status{}<tool_call|>", [("get_status", {})], None),
    ],
    ids=["single", "text_before", "two", "nested", "number_bool", "hyphen", "dotted", "no_args"],
)
def test_vllm_extract(
    gen: int, text: str, calls: list[tuple[str, Any]], content: str | None
) -> None:
    msg = run(text, gen, **T)
    assert msg.content == content
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == calls


@GENS
def test_vllm_incomplete_tool_call(gen: int) -> None:
    text = f"<|tool_call>call:get_weather{{location:{Q}London"
    msg = run(text, gen, **T)
    if gen == 1:
        assert (msg.content, msg.tool_calls) == (text, [])
    else:  # CUT: never repaired, the arguments as streamed
        assert (msg.content, msg.tool_calls[0].arguments) == (None, '{"location":"London')


# --- [vllm] streaming ------------------------------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (
            [
                "<|tool_call>",
                "call:get_weather{",
                f"location:{Q}Paris",
                ", France",
                f"{Q}}}",
                "<tool_call|>",
            ],
            {"location": "Paris, France"},
        ),
        (
            [
                "<|tool_call>",
                "call:get_weather{",
                f"location:{Q}Tokyo{Q},",
                f"unit:{Q}celsius{Q}}}",
                "<tool_call|>",
            ],
            {"location": "Tokyo", "unit": "celsius"},
        ),
        (
            ["<|tool_call>", "call:set_config{", "count:42,", "active:true}", "<tool_call|>"],
            {"count": 42, "active": True},
        ),
        (
            ["<|tool_call>", "call:search{input:{all:tru", "e}}", "<tool_call|>"],
            {"input": {"all": True}},
        ),
        (["<|tool_call>", "call:set{flag:fals", "e}", "<tool_call|>"], {"flag": False}),
        (["<|tool_call>", "call:set{count:4", "2}", "<tool_call|>"], {"count": 42}),
        (
            ["<|tool_call>", "call:todowrite{", f"content:{Q}Buy milk<|", '"|>}', "<tool_call|>"],
            {"content": "Buy milk"},
        ),
        (
            [
                "<|tool_call>",
                "call:Edit{",
                f"file_path:{Q}src/env.py{Q},",
                f"old_string:{Q}old_val{Q},",
                f"new_string:{Q}new_val{Q},",
                "replace_all:",
                "false}",
                "<tool_call|>",
            ],
            {
                "file_path": "src/env.py",
                "old_string": "old_val",
                "new_string": "new_val",
                "replace_all": False,
            },
        ),
    ],
    ids=[
        "basic",
        "multi_arg",
        "numeric",
        "true_split",
        "false_split",
        "number_split",
        "split_delimiter",
        "trailing_bool",
    ],
)
def test_vllm_streaming(gen: int, chunks: list[str], expected: dict[str, Any]) -> None:
    args = streamed_args(chunks, gen, **T)
    assert json.loads(args) == expected
    assert "<|" not in args
    assert args.count("}") == json.dumps(expected).count("}")  # no extra brace
    msg = stream(chunks, generation=gen, id_factory=counter_ids(), **T)
    assert msg.content is None
    assert msg == run("".join(chunks), gen, **T)


@GENS
def test_vllm_streaming_name_and_quoted_keys(gen: int) -> None:
    chunks = ["<|tool_call>", "call:get_weather{", f"location:{Q}Paris{Q}}}", "<tool_call|>"]
    p = StreamParser(generation=gen, id_factory=counter_ids(), **T)
    got = [d for c in chunks for d in p.feed(c)] + p.finish()
    names = [c.name for d in got for c in d.tool_calls if c.name]
    assert names == ["get_weather"]
    args = "".join(c.arguments or "" for d in got for c in d.tool_calls)
    assert args.startswith("{") and '"location"' in args


@GENS
def test_vllm_streaming_text_before_call(gen: int) -> None:
    chunks = [
        "Let me check ",
        "the weather. ",
        "<|tool_call>",
        "call:get_weather{",
        f"location:{Q}London{Q}}}",
        "<tool_call|>",
    ]
    msg = stream(chunks, generation=gen, **T)
    assert msg.content == "Let me check the weather."
    assert args_of(msg) == [{"location": "London"}]


@GENS
def test_vllm_plain_text_after_call_not_duplicated(gen: int) -> None:
    chunks = [
        "<|tool_call>",
        "call:get_weather{",
        f"location:{Q}Paris{Q}}}",
        "<tool_call|><",
        "div>",
    ]
    msg = stream(chunks, generation=gen, **T)
    assert (msg.content, args_of(msg)) == ("<div>", [{"location": "Paris"}])


@GENS
def test_vllm_html_argument_not_duplicated(gen: int) -> None:
    chunks = [
        "<|tool_call>",
        "call:write_file{",
        f"path:{Q}index.html{Q},",
        f"content:{Q}<!DOCTYPE html>\n<",
        'html lang="zh-CN">\n<',
        "head>\n    <",
        'meta charset="UTF-8">\n    <',
        'meta name="viewport" content="width=device-width">\n',
        f"{Q}}}",
        "<tool_call|>",
    ]
    msg = stream(chunks, generation=gen, **T)
    assert args_of(msg) == [
        {
            "path": "index.html",
            "content": '<!DOCTYPE html>\n<html lang="zh-CN">\n<head>\n    <meta charset="UTF-8">\n'
            '    <meta name="viewport" content="width=device-width">\n',
        }
    ]


# --- [vllm-regex] -----------------------------------------------------------------------------


@GENS
def test_vllm_regex_canonical_and_turn_end(gen: int) -> None:
    msg = run(gcall("bash", f"command:{Q}ls -la /work{Q}"), gen, **T)
    assert args_of(msg) == [{"command": "ls -la /work"}]
    text = f"<|tool_call>call:gdb{{args:{Q}-batch -ex run /tmp/poc{Q}}}<turn|>"
    msg = run(text, gen, **T)
    assert ([c.name for c in msg.tool_calls], msg.content) == (["gdb"], None)
    assert args_of(msg) == [{"args": "-batch -ex run /tmp/poc"}]


@GENS
def test_vllm_regex_sequential_calls_newline_between(gen: int) -> None:
    text = (
        gcall("read_file", f"path:{Q}/work/Makefile{Q}")
        + "\n"
        + gcall("bash", f"command:{Q}make -j8{Q}")
    )
    msg = run(text, gen, **T)
    assert ([c.name for c in msg.tool_calls], msg.content) == (["read_file", "bash"], None)


@GENS
def test_vllm_regex_colon_prefixed_tool_call(gen: int) -> None:
    text = f"<|tool_call>:call:bash{{command:{Q}pytest{Q}}}<tool_call|>"
    msg = run(text, gen, **T)
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("bash", {"command": "pytest"})
    ]


@GENS
def test_vllm_regex_bare_call_is_content(gen: int) -> None:
    # BARE: vLLM's offline fallback reads these; without `<|tool_call>` we keep them as text.
    for text in [
        f"some prose\ncall:bash{{command:{Q}make -j8{Q}}}",
        f"call:web-search{{query:{Q}gemma{Q}}}",
    ]:
        msg = run(text, gen, **T)
        assert (msg.content, msg.tool_calls) == (text, [])


# --- [vllm-reasoning] (thinking on) ---------------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("<|channel>This is reasoning", "This is reasoning", None),
        ("This is content", None, "This is content"),
        (
            "<|channel>This is a reasoning section<channel|>This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        ("<|channel>This is a reasoning section<channel|>", "This is a reasoning section", None),
        (
            "<|channel>This\nThat<channel|>This is the rest\nThat",
            "This\nThat",
            "This is the rest\nThat",
        ),
        ("", None, None),
        (
            "Before\n<|channel>This is a reasoning section<channel|>\nThis is the rest",
            "This is a reasoning section",
            "Before\n\nThis is the rest",
        ),
        (
            "<|channel>thought\nActual reasoning here<channel|>Final answer",
            "Actual reasoning here",
            "Final answer",
        ),
        ("<|channel>thought\n<channel|>", None, None),
        ("<|channel>thought\nLine1\nLine2<channel|>Answer", "Line1\nLine2", "Answer"),
        ("<|channel>thousand reasons<channel|>Done", "thousand reasons", "Done"),
        ("<|tool_call>", None, "<|tool_call>"),
        # STRAY: vLLM batch: reasoning "This is a reasoning section"; vLLM streaming: the marker
        # dropped. Here the unpaired close is markup, dropped; its text stays the answer.
        (
            "This is a reasoning section<channel|>This is the rest",
            None,
            "This is a reasoning sectionThis is the rest",
        ),
        # KEEP: vLLM drops the end-of-turn text.
        # end-of-turn token: markup, as vLLM drops it
        ("The answer is 4.<turn|>", None, "The answer is 4."),
    ],
)
def test_vllm_reasoning(gen: int, text: str, reasoning: str | None, content: str | None) -> None:
    msg = run(text, gen, **R)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
def test_vllm_reasoning_then_tool_call(gen: int) -> None:
    text = "<|channel>thought\nI need to find files<channel|>" + gcall(
        "find", f"path:{Q}research{Q}"
    )
    msg = run(text, gen, **R)
    assert msg.reasoning_content == "I need to find files"
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("find", {"path": "research"})
    ]
    tokens = [
        "<|channel>",
        "thought",
        "\n",
        "I",
        " need",
        " to",
        " find",
        " files",
        "<channel|>",
        "<|tool_call>",
        "call",
        ":",
        "find",
        "{",
        "path",
        ":",
        Q,
        "research",
        Q,
        "}",
        "<tool_call|>",
    ]
    assert stream(tokens, generation=gen, **R).reasoning_content == "I need to find files"


@GENS
def test_vllm_reasoning_only_then_content(gen: int) -> None:
    tokens = [
        "<|channel>",
        "thought",
        "\n",
        "Let",
        " me",
        " think",
        "<channel|>",
        "The",
        " answer",
        " is",
        " 42",
    ]
    msg = stream(tokens, generation=gen, **R)
    assert (msg.reasoning_content, msg.content, msg.tool_calls) == (
        "Let me think",
        "The answer is 42",
        [],
    )


@GENS
def test_vllm_thinking_off_keeps_channel_text(gen: int) -> None:
    # Divergence: a thought channel is parsed whatever `thinking` says (vLLM keeps
    # it as text when thinking is off); its markers never reach content
    text = "<|channel>thought\nx<channel|>y"
    msg = run(text, gen, tool_parser="gemma4", reasoning_parser="gemma4")
    assert (msg.reasoning_content, msg.content) == ("x", "y")
    msg = run(text, gen, tool_parser="gemma4")  # no reasoning parser: no reasoning_content
    assert (msg.reasoning_content, msg.content) == (None, "xy")


# --- [vllm-engine] ----------------------------------------------------------------------------

REASONING_TEXT = (
    "The user is asking for the current weather in Dallas, Texas, and specifically requests "
    "the temperature in Fahrenheit."
)
DALLAS = (
    "<|channel>thought\n"
    + REASONING_TEXT
    + "<channel|><|tool_call>call:get_current_weather{"
    + f"city:{Q}Dallas{Q},state:{Q}TX{Q},unit:{Q}fahrenheit{Q}}}<tool_call|>"
)


@GENS
@pytest.mark.parametrize("size", [1, 10, len(DALLAS)])
def test_engine_reasoning_then_tool_call(gen: int, size: int) -> None:
    pieces = [DALLAS[i : i + size] for i in range(0, len(DALLAS), size)]
    msg = stream(pieces, generation=gen, **R)
    assert msg.reasoning_content == REASONING_TEXT
    assert msg.content is None  # no call text leaks
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == [
        ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
    ]


@GENS
def test_engine_prompt_ends_inside_open_channel(gen: int) -> None:
    prompt = "<|turn>model\n<|channel>thought\n"
    msg = run("Sure, the answer is 42<channel|>Hello world", gen, prompt=prompt, **R)
    assert (msg.reasoning_content, msg.content) == ("Sure, the answer is 42", "Hello world")


@GENS
def test_engine_redundant_channel_open_after_prefill(gen: int) -> None:
    prompt = "<|turn>model\n<|channel>thought\n"
    msg = run("<|channel>thought\nReasoning body<channel|>Final content", gen, prompt=prompt, **R)
    assert (msg.reasoning_content, msg.content) == ("Reasoning body", "Final content")


# --- [dynamo] --------------------------------------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            f"loc:{Q}San Francisco, CA{Q},unit:{Q}celsius{Q},count:42,flag:true,nope:null",
            {
                "loc": "San Francisco, CA",
                "unit": "celsius",
                "count": 42,
                "flag": True,
                "nope": None,
            },
        ),
        (
            "cfg:{ssl:true,pool:{min:5,max:20}}",
            {"cfg": {"ssl": True, "pool": {"min": 5, "max": 20}}},
        ),
        (f"tags:[{Q}a{Q},{Q}b{Q},{Q}c{Q}]", {"tags": ["a", "b", "c"]}),
        ("xs:[1,2,3.5,true,false,null]", {"xs": [1, 2, 3.5, True, False, None]}),
        (
            f'html:{Q}<div class="x"><h1>Hi</h1></div>{Q}',
            {"html": '<div class="x"><h1>Hi</h1></div>'},
        ),
        (f"body:{Q}line1\nline2\nline3{Q}", {"body": "line1\nline2\nline3"}),
        (f" x : 1 , y : {Q}z{Q} ", {"x": 1, "y": "z"}),
        ("a:-1,b:-2.5,c:0,d:0.0", {"a": -1, "b": -2.5, "c": 0, "d": 0.0}),
        (f"x:{Q}has,comma:and{{brace}}{Q}", {"x": "has,comma:and{brace}"}),
        ("a:{b:{c:{d:{e:1}}}}", {"a": {"b": {"c": {"d": {"e": 1}}}}}),
        (f"items:[{{n:{Q}x{Q}}},{{n:{Q}y{Q}}}]", {"items": [{"n": "x"}, {"n": "y"}]}),
        ("x:,y:1", {"x": "", "y": 1}),
        ("x:1,y:", {"x": 1, "y": ""}),
        ("x:NULL,y:None,z:nil,w:Nil", {"x": None, "y": None, "z": None, "w": None}),
    ],
)
def test_dynamo_args(gen: int, args: str, expected: dict[str, Any]) -> None:
    assert args_of(run(gcall("f", args), gen, **T)) == [expected]


@GENS
def test_dynamo_parallel_calls_and_names(gen: int) -> None:
    text = gcall("a", "x:1") + gcall("b", f"y:{Q}two{Q}") + "<|tool_call>call:c{}<tool_call|>"
    msg = run(text, gen, **T)
    assert ([c.name for c in msg.tool_calls], msg.content) == (["a", "b", "c"], None)
    for name in ["list-tasklists", "mcp__portal__search-doc", "my.namespaced.fn"]:
        assert [
            c.name for c in run(f"<|tool_call>call:{name}{{}}<tool_call|>", gen, **T).tool_calls
        ] == [name]


@GENS
def test_dynamo_surrounding_text(gen: int) -> None:
    msg = run("Sure thing. " + gcall("f", "x:1") + " All set.", gen, **T)
    assert msg.content == "Sure thing. All set."  # BLANKS (Dynamo: two blanks)
    assert args_of(msg) == [{"x": 1}]
    assert run("just plain prose here", gen, **T).content == "just plain prose here"


@GENS
def test_dynamo_truncated_tail_after_complete_call(gen: int) -> None:
    tail = f"<|tool_call>call:partial{{y:{Q}incomp"
    msg = run(gcall("complete", "x:1") + tail, gen, **T)
    assert msg.tool_calls[0].name == "complete"
    if gen == 1:
        assert (len(msg.tool_calls), msg.content) == (1, tail)
    else:  # CUT: never repaired, the arguments as streamed
        assert [c.arguments for c in msg.tool_calls] == ['{"x":1}', '{"y":"incomp']


@GENS
def test_dynamo_incomplete_call_keeps_a_complete_trailing_number(gen: int) -> None:
    text = "<|tool_call>call:foo{x:1"
    msg = run(text, gen, **T)
    if gen == 1:
        assert (msg.content, msg.tool_calls) == (text, [])
    else:  # CUT: a number cut by the end of output never went out (never repaired)
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("foo", "{")]


@GENS
def test_dynamo_malformed_args_are_content(gen: int) -> None:
    # Dynamo emits `f` with `{}`; a body that breaks before its first `key:` is not a call
    # here (docs/parsers.md, Gemma 4 "Not a call"), so the text stays content.
    text = "<|tool_call>call:f{garbage no colons here}<tool_call|>"
    msg = run(text, gen, **T)
    assert (msg.content, msg.tool_calls) == (text, [])


# --- [dynamo] reasoning/gemma4_parser.rs ---------------------------------------------------


@GENS
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            "<|channel>thought\nstep one\nstep two<channel|>The answer is 42.",
            "step one\nstep two",
            "The answer is 42.",
        ),
        ("just a plain answer", None, "just a plain answer"),
        ("intro <|channel>thought\npartial", "partial", "intro "),
        (
            "Hello. <|channel>thought\nrumination<channel|> Goodbye.",
            "rumination",
            "Hello.  Goodbye.",
        ),
        (
            "<|channel>raw reasoning without prefix<channel|>answer",
            "raw reasoning without prefix",
            "answer",
        ),
        # STRAY: Dynamo's batch parser makes "some thinking" reasoning; a stream cannot know.
        # an unpaired close is markup: dropped, the text stays the answer
        ("some thinking<channel|>final answer", None, "some thinkingfinal answer"),
    ],
)
def test_dynamo_reasoning_batch(gen: int, text: str, reasoning: str | None, content: str) -> None:
    msg = run(text, gen, **R)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)


@GENS
@pytest.mark.parametrize(
    ("chunks", "reasoning", "content"),
    [
        (["<|channel>thought\nrumination<channel|>final"], "rumination", "final"),
        (
            ["<|channel>", "thou", "ght\n", "real reasoning here", "<channel|>", "the answer."],
            "real reasoning here",
            "the answer.",
        ),
        (
            ["intro ", "<|chan", "nel>thought\n", "rumination", "<channel|>", "outro"],
            "rumination",
            "intro outro",
        ),
        (["<|channel>thought\n", "thinking", "<chan", "nel|>", "answer"], "thinking", "answer"),
    ],
)
def test_dynamo_reasoning_streaming(
    gen: int, chunks: list[str], reasoning: str, content: str
) -> None:
    msg = stream(chunks, generation=gen, id_factory=counter_ids(), **R)
    assert (msg.reasoning_content, msg.content) == (reasoning, content)
    assert msg == run("".join(chunks), gen, **R)
