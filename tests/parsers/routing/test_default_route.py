"""Qwen3-Coder with tool_choice auto and nothing set routes through V2 (docs/parser-selection.md).

Self-contained on purpose: test_default_is_discriminating.py runs this very file with the
family-default table changed, and expects it to fail.
"""

from __future__ import annotations

import os

import pytest

import parsers

GET_WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


@pytest.mark.isolated(env={"DYN_PARSER_VERSION": None, "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None})
def test_qwen3_coder_auto_routes_through_v2_by_default() -> None:
    assert "DYN_PARSER_VERSION" not in os.environ
    settings = parsers.load_settings(tool_parser="qwen3_coder", reasoning_parser="qwen3")
    request = {"messages": [], "tools": [GET_WEATHER], "tool_choice": "auto"}
    route = parsers.select_route(settings, request)
    assert route.kind == "parser_v2", route
    assert route.generation == 2
