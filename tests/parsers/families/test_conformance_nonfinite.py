"""Conformance: schema typing never writes a value JSON cannot carry (inf/NaN).

Ported from SGLang test/registered/function_call/test_nonfinite_coercion.py (itself a port of
vLLM#43984): a number-, array- or object-typed value such as `1e999`, `NaN` or `[1e999]`
degrades to the raw string, so `arguments` stays valid JSON. Run through `qwen3_coder` (the
family SGLang tests) in both generations, batch and streaming (`parser_check.run`), and
`parsers.schema.convert_value` directly (shared by Qwen3-Coder, GLM and Kimi K3).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parser_check import run, tool

from parsers.schema import convert_value

NON_FINITE_NUMBERS = ["inf", "-inf", "Infinity", "1e999", "-1e999", "nan", "NaN"]
NON_FINITE_CONTAINERS = [
    "[1e999]",
    "[1, 2, 1e999]",
    "[Infinity]",
    "[NaN]",
    '{"x": 1e999}',
    "(1e999,)",  # a Python literal (the ast fallback)
    "{'x': 1e999}",
]


def _reject_constant(value: str) -> Any:
    raise AssertionError(f"arguments contain a non-JSON constant: {value}")


@pytest.mark.parametrize("raw", NON_FINITE_NUMBERS)
def test_non_finite_number_degrades_to_string(raw: str) -> None:
    assert convert_value(raw, {"type": "number"}) == raw


@pytest.mark.parametrize("raw", NON_FINITE_CONTAINERS)
def test_non_finite_container_degrades_to_string(raw: str) -> None:
    kind = "object" if raw.startswith("{") else "array"
    assert convert_value(raw, {"type": kind}) == raw


def test_finite_values_still_coerced() -> None:
    assert convert_value("42", {"type": "number"}) == 42
    assert convert_value("3.14", {"type": "number"}) == 3.14
    assert convert_value("[1, 2, 3]", {"type": "array"}) == [1, 2, 3]
    assert convert_value('{"a": 1}', {"type": "object"}) == {"a": 1}


@pytest.mark.parametrize("gen", [1, 2])
def test_qwen3_coder_arguments_stay_valid_json(gen: int) -> None:
    values = {
        "n": ("1e999", "number"),
        "arr": ("[1, 2, 1e999]", "array"),
        "obj": ('{"x": NaN}', "object"),
    }
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, (v, _) in values.items())
    text = f"<tool_call>\n<function=f>\n{body}</function>\n</tool_call>"
    schema = tool("f", **{k: kind for k, (_, kind) in values.items()})
    msg = run(text, gen, tool_parser="qwen3_coder", tools=[schema])
    args = json.loads(msg.tool_calls[0].arguments, parse_constant=_reject_constant)
    assert args == {k: v for k, (v, _) in values.items()}
