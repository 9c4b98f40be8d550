"""DeepSeek V4 (`deepseek_v4`, V1 and V2) and V4.1 (`deepseek_v41`, V2 only): DSML."""

from __future__ import annotations

from typing import Any

import pytest
from parser_check import calls, run, tool
from parser_samples.deepseek import BAR, dsml

from parsers import ConfigError, parse, stream

V4 = {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4"}
V41 = {"tool_parser": "deepseek_v41", "reasoning_parser": "deepseek_v41"}
GENS = pytest.mark.parametrize("gen", [1, 2])


@GENS
def test_spec_example_starts_in_reasoning(gen: int) -> None:
    text = dsml([("get_weather", [("location", "Paris", True)])])
    assert text == (
        f'<{BAR}DSML{BAR}tool_calls>\n<{BAR}DSML{BAR}invoke name="get_weather">\n'
        f'<{BAR}DSML{BAR}parameter name="location" string="true">Paris</{BAR}DSML{BAR}parameter>\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}tool_calls>"
    )
    msg = run(text, gen, **V4)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [
        ("get_weather", '{"location":"Paris"}')
    ]
    assert (msg.content, msg.reasoning_content) == (None, None)
    # the template prefills <think>: plain text first is reasoning
    msg = run("Let me see.</think>Sure." + text, gen, **V4)
    assert (msg.reasoning_content, msg.content) == ("Let me see.", "Sure.")


@GENS
def test_dsml_block_ends_reasoning(gen: int) -> None:
    msg = run("thinking about it\n" + dsml([("f", [])]), gen, **V4)
    assert (msg.reasoning_content, calls(msg)) == ("thinking about it", [("f", {})])


@GENS
def test_string_true_trimmed_string_false_json_or_text(gen: int) -> None:
    text = dsml(
        [
            (
                "f",
                [
                    ("s", "  padded Zürich\n", True),
                    ("n", "3", False),
                    ("o", '{"a": [1, 2.50]}', False),
                    ("bad", "not json", False),
                    ("t", "true", False),
                    ("raw", "<b>x</b>", True),
                ],
            )
        ]
    )
    assert calls(run(text, gen, **V4)) == [
        (
            "f",
            {
                "s": "padded Zürich",
                "n": 3,
                "o": {"a": [1, 2.5]},
                "bad": "not json",
                "t": True,
                "raw": "<b>x</b>",
            },
        )
    ]


@GENS
def test_several_invokes_text_before_and_after(gen: int) -> None:
    text = "r</think>Checking.\n" + dsml([("a", [("x", "1", False)]), ("b", [])]) + "\nDone."
    msg = run(text, gen, **V4)
    assert (msg.content, calls(msg)) == ("Checking.\nDone.", [("a", {"x": 1}), ("b", {})])


@GENS
def test_missing_block_close_keeps_complete_invokes(gen: int) -> None:
    text = dsml([("a", [("q", "1", True)]), ("b", [])], close=False)
    msg = run(text, gen, **V4)
    assert (msg.content, calls(msg)) == (None, [("a", {"q": "1"}), ("b", {})])


def test_truncated_invoke_v1_content_v2_closed() -> None:
    head = dsml([("a", [("q", "1", True)])], close=False)
    tail = f'<{BAR}DSML{BAR}invoke name="b">\n<{BAR}DSML{BAR}parameter name="x" string="true">tru'
    v1 = run(head + tail, 1, **V4, finish_reason="length")
    assert (calls(v1), v1.content) == ([("a", {"q": "1"})], tail)
    v2 = run(head + tail, 2, **V4, finish_reason="length")
    assert [(c.name, c.arguments) for c in v2.tool_calls] == [
        ("a", '{"q":"1"}'),
        ("b", '{"x":"tru'),  # never repaired: as streamed
    ]


@GENS
def test_malformed_block_is_content(gen: int) -> None:
    text = f"<{BAR}DSML{BAR}tool_calls>\nno invoke here\n</{BAR}DSML{BAR}tool_calls> end"
    msg = run("r</think>" + text, gen, **V4)
    assert (msg.content, msg.tool_calls) == (text, [])


@GENS
def test_thinking_mode_chat_disables_reasoning(gen: int) -> None:
    text = "Plain answer." + dsml([("f", [])])
    msg = run(text, gen, request={"chat_template_kwargs": {"thinking_mode": "chat"}}, **V4)
    assert (msg.reasoning_content, msg.content, calls(msg)) == (None, "Plain answer.", [("f", {})])


def test_v41_spaced_tags_v2_only() -> None:
    text = "Answer. " + dsml([("get_weather", [("location", "Paris", True)])], v41=True)
    msg = run(text, 2, prompt="<｜Assistant｜></think>", **V41)
    assert (msg.content, calls(msg)) == ("Answer.", [("get_weather", {"location": "Paris"})])
    assert parse(text, **V41).route == "parser_v2"  # family default
    with pytest.raises(ConfigError, match="generation"):
        parse(text, generation=1, **V41)


def test_v41_prefill_open_and_closed() -> None:
    call = dsml([("f", [("n", "7", False)])], v41=True)
    on = run("Reason.</think>Sure." + call, 2, prompt="<｜Assistant｜><think>", **V41)
    assert (on.reasoning_content, on.content, calls(on)) == ("Reason.", "Sure.", [("f", {"n": 7})])
    off = run("<think>literal</think> text", 2, prompt="<｜Assistant｜></think>", **V41)
    # a prompt ending in </think> means thinking is off; explicit markers are still parsed
    assert (off.reasoning_content, off.content) == ("literal", " text")


def test_v41_leading_close_means_reasoning_before() -> None:
    # no prompt, thinking on: the output starts where the template leaves it, in `<think>`,
    # so batch and streaming agree
    text = "Hmm, weather.</think>Here: " + dsml([("f", [])], v41=True)
    for msg in (parse(text, **V41), stream([text], **V41), run(text, 2, **V41)):
        assert (msg.reasoning_content, msg.content, calls(msg)) == (
            "Hmm, weather.",
            "Here:",
            [("f", {})],
        )
    # a quoted closer does not end reasoning
    quoted = run('He typed "</think>" here', 2, **V41)
    assert (quoted.content, quoted.reasoning_content) == (None, 'He typed "</think>" here')


def test_v41_starts_in_response_with_thinking_off_or_a_prompt_without_the_opener() -> None:
    for kw in ({"thinking": False}, {"prompt": "<｜Assistant｜></think>"}, {"prompt": "x"}):
        msg = run("Just text.", 2, **V41, **kw)  # type: ignore[arg-type]
        assert (msg.content, msg.reasoning_content) == ("Just text.", None)
    assert run("Just text.", 2, **V41).reasoning_content == "Just text."


@GENS
def test_v32_function_calls_block_is_not_a_v4_block(gen: int) -> None:
    # As vLLM's DeepSeekV4ToolParser (test_function_calls_block_is_not_accepted): V4 writes
    # `tool_calls`; the V3.2 wrapper `function_calls` is text. No reasoning parser here, so
    # the text is content.
    text = dsml([("get_weather", [("location", "Hangzhou", True), ("date", "2024-01-16", True)])])
    text = text.replace("tool_calls>", "function_calls>")
    msg = run(text, gen, tool_parser="deepseek_v4")
    assert (msg.content, msg.tool_calls) == (text, [])


@pytest.mark.parametrize("gen", [1, 2])
def test_an_orphan_invoke_meeting_another_opener_in_a_value_is_not_a_call(gen: int) -> None:
    # Recovery takes an invoke without its block start only when it closes; a second invoke
    # opener inside its value means it was cut (before, the first swallowed the second as
    # value text, and a run of such invokes held to the end was rescanned once per invoke)
    d = f"<{BAR}DSML{BAR}"
    cut = f'{d}invoke name="f">{d}parameter name="a" string="true">x'
    whole = f'{d}invoke name="f">{d}parameter name="a" string="true">y</{BAR}DSML{BAR}parameter>'
    text = cut + whole + f"</{BAR}DSML{BAR}invoke>end"
    kw: dict[str, Any] = {"tool_parser": "deepseek_v4", "tools": [tool("f")], "prompt": "x"}
    msg = run(text, gen, **kw)
    if gen == 2:
        assert msg.content == cut + "end"
        assert calls(msg) == [("f", {"a": "y"})]
    else:  # V1: the rejected jail runs to its block close (here the end): content, verbatim
        assert msg.content == text and not msg.tool_calls
