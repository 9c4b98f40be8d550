"""Streaming output of one tool call per family, under DYN_PARSER_VERSION unset, 1 and 2 (and
the suite's own mode, variant `session`).

Through the sidecar's path: `load_settings()` from the child's environment, the request policy
(`plan_request`), then `StreamParser(plan=...)` fed one character at a time. Both routes end with
the same call; they differ visibly in timing, which is what each mode must show:
- legacy_jail (V1): nothing of the call goes out before its end marker has arrived; then the
  call goes out whole (id, name and complete arguments in one delta).
- parser_v2 (V2): the call's name goes out before the end marker has arrived.
"""

from __future__ import annotations

import json
import os

import pytest
from routing_cases import MODES, StreamCase, mode_value, stream_cases

import parsers
from parsers.api import Aggregate
from parsers.policy import plan_request

PREAMBLE = "Checking. "


def _expected(case: StreamCase, value: str | None) -> str:
    if value not in (None, "", "auto", "1", "2"):
        return "ConfigError"
    if value == "1":
        return "ConfigError" if case.v2_only else "legacy_jail"
    if value == "2" or case.v2_only or case.tool_parser == "qwen3_coder":
        return "parser_v2"
    return "legacy_jail"


@pytest.mark.isolated(envs=MODES)
@pytest.mark.parametrize("case", stream_cases(), ids=lambda c: c.id)
def test_streamed_call(case: StreamCase, isolated_variant: str) -> None:
    expected = _expected(case, mode_value(isolated_variant, os.environ))
    if expected == "ConfigError":
        with pytest.raises(parsers.ConfigError, match="DYN_PARSER_VERSION"):
            parsers.load_settings(tool_parser=case.tool_parser)
        return
    settings = parsers.load_settings(tool_parser=case.tool_parser)
    plan = plan_request(settings, {"tools": case.tools()}, case.prompt)
    assert plan.route == expected
    parser = parsers.StreamParser(plan=plan)
    text = PREAMBLE + case.piece.markup
    aggregate = Aggregate()
    name_at: int | None = None  # characters fed when the call's name first went out
    named_delta: parsers.ToolCallDelta | None = None
    for fed, char in enumerate(text, 1):
        deltas = parser.feed(char)
        aggregate.add(deltas)
        for delta in deltas:
            for call in delta.tool_calls:
                if call.name and name_at is None:
                    name_at, named_delta = fed, call
    aggregate.add(parser.finish())
    message = aggregate.message(parser.finish_reason, parser.route)

    assert message.route == expected
    assert [c.name for c in message.tool_calls] == [case.piece.name]
    assert json.loads(message.tool_calls[0].arguments) == case.piece.arguments
    assert message.finish_reason == "tool_calls"
    assert (message.content or "").strip() == PREAMBLE.strip()
    assert name_at is not None and named_delta is not None
    if expected == "legacy_jail":
        assert name_at == len(text), "V1 released the call before its end marker"
        assert named_delta.arguments is not None
        assert json.loads(named_delta.arguments) == case.piece.arguments  # whole, in one delta
    else:
        assert name_at < len(text), "V2 held the call name back until the end marker"
