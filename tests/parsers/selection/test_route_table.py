"""The whole route table (docs/parser-selection.md) as one parametrized test.

Expected values come from the literal table below, written from the contract, never from the code
under test. Every deployment shape (tool parser only, reasoning parser only, both; plus none)
of every family, every `tool_choice`, every `DYN_PARSER_VERSION` value.
"""

from __future__ import annotations

from typing import Any

import pytest

from parsers import (
    FAMILIES,
    TOOL_PARSERS,
    ConfigError,
    InvalidRequest,
    load_settings,
    routing,
    select_route,
)
from parsers.policy import plan_request

# Cells: jail = legacy_jail (V1) | v2 = parser_v2 | pass = pass_through
#        400  = InvalidRequest naming DYN_PARSER_VERSION=2 (only the jail could serve it)
#        cfg  = ConfigError at startup naming DYN_PARSER_VERSION
# A version "auto" row is checked with the variable unset and with "auto".
ROUTE_TABLE = """
tool         reasoning     family        version | unset none auto required named
-            -             -             auto    | pass  pass pass jail     jail
-            -             -             1       | pass  pass pass jail     jail
-            -             -             2       | pass  pass pass 400      400
glm47        -             glm           auto    | jail  jail jail jail     jail
glm47        -             glm           1       | jail  jail jail jail     jail
glm47        -             glm           2       | v2    v2   v2   v2       v2
-            glm45         glm           auto    | jail  jail jail jail     jail
-            glm45         glm           1       | jail  jail jail jail     jail
-            glm45         glm           2       | v2    v2   v2   400      400
glm47        glm45         glm           auto    | jail  jail jail jail     jail
glm47        glm45         glm           1       | jail  jail jail jail     jail
glm47        glm45         glm           2       | v2    v2   v2   v2       v2
deepseek_v4  -             deepseek_v4   auto    | jail  jail jail jail     jail
deepseek_v4  -             deepseek_v4   1       | jail  jail jail jail     jail
deepseek_v4  -             deepseek_v4   2       | v2    v2   v2   v2       v2
-            deepseek_v4   deepseek_v4   auto    | jail  jail jail jail     jail
-            deepseek_v4   deepseek_v4   1       | jail  jail jail jail     jail
-            deepseek_v4   deepseek_v4   2       | v2    v2   v2   400      400
deepseek_v4  deepseek_v4   deepseek_v4   auto    | jail  jail jail jail     jail
deepseek_v4  deepseek_v4   deepseek_v4   1       | jail  jail jail jail     jail
deepseek_v4  deepseek_v4   deepseek_v4   2       | v2    v2   v2   v2       v2
deepseek_v41 -             deepseek_v41  auto    | v2    v2   v2   v2       v2
deepseek_v41 -             deepseek_v41  1       | cfg   cfg  cfg  cfg      cfg
deepseek_v41 -             deepseek_v41  2       | v2    v2   v2   v2       v2
-            deepseek_v41  deepseek_v41  auto    | v2    v2   v2   400      400
-            deepseek_v41  deepseek_v41  1       | cfg   cfg  cfg  cfg      cfg
-            deepseek_v41  deepseek_v41  2       | v2    v2   v2   400      400
deepseek_v41 deepseek_v41  deepseek_v41  auto    | v2    v2   v2   v2       v2
deepseek_v41 deepseek_v41  deepseek_v41  1       | cfg   cfg  cfg  cfg      cfg
deepseek_v41 deepseek_v41  deepseek_v41  2       | v2    v2   v2   v2       v2
kimi_k2      -             kimi_k2       auto    | jail  jail jail jail     jail
kimi_k2      -             kimi_k2       1       | jail  jail jail jail     jail
kimi_k2      -             kimi_k2       2       | v2    v2   v2   v2       v2
-            kimi_k25      kimi_k2       auto    | jail  jail jail jail     jail
-            kimi_k25      kimi_k2       1       | jail  jail jail jail     jail
-            kimi_k25      kimi_k2       2       | v2    v2   v2   400      400
kimi_k2      kimi_k25      kimi_k2       auto    | jail  jail jail jail     jail
kimi_k2      kimi_k25      kimi_k2       1       | jail  jail jail jail     jail
kimi_k2      kimi_k25      kimi_k2       2       | v2    v2   v2   v2       v2
kimi_k3      -             kimi_k3       auto    | jail  jail jail jail     jail
kimi_k3      -             kimi_k3       1       | jail  jail jail jail     jail
kimi_k3      -             kimi_k3       2       | v2    v2   v2   v2       v2
-            kimi_k3       kimi_k3       auto    | jail  jail jail jail     jail
-            kimi_k3       kimi_k3       1       | jail  jail jail jail     jail
-            kimi_k3       kimi_k3       2       | v2    v2   v2   400      400
kimi_k3      kimi_k3       kimi_k3       auto    | jail  jail jail jail     jail
kimi_k3      kimi_k3       kimi_k3       1       | jail  jail jail jail     jail
kimi_k3      kimi_k3       kimi_k3       2       | v2    v2   v2   v2       v2
gemma4       -             gemma4        auto    | jail  jail jail jail     jail
gemma4       -             gemma4        1       | jail  jail jail jail     jail
gemma4       -             gemma4        2       | v2    v2   v2   v2       v2
-            gemma4        gemma4        auto    | jail  jail jail jail     jail
-            gemma4        gemma4        1       | jail  jail jail jail     jail
-            gemma4        gemma4        2       | v2    v2   v2   400      400
gemma4       gemma4        gemma4        auto    | jail  jail jail jail     jail
gemma4       gemma4        gemma4        1       | jail  jail jail jail     jail
gemma4       gemma4        gemma4        2       | v2    v2   v2   v2       v2
muse         -             muse          auto    | v2    v2   v2   v2       v2
muse         -             muse          1       | cfg   cfg  cfg  cfg      cfg
muse         -             muse          2       | v2    v2   v2   v2       v2
-            muse          muse          auto    | v2    v2   v2   400      400
-            muse          muse          1       | cfg   cfg  cfg  cfg      cfg
-            muse          muse          2       | v2    v2   v2   400      400
muse         muse          muse          auto    | v2    v2   v2   v2       v2
muse         muse          muse          1       | cfg   cfg  cfg  cfg      cfg
muse         muse          muse          2       | v2    v2   v2   v2       v2
hermes       -             qwen3         auto    | jail  jail jail jail     jail
hermes       -             qwen3         1       | jail  jail jail jail     jail
hermes       -             qwen3         2       | v2    v2   v2   v2       v2
qwen3_coder  -             qwen3         auto    | v2    jail v2   jail     jail
qwen3_coder  -             qwen3         1       | jail  jail jail jail     jail
qwen3_coder  -             qwen3         2       | v2    v2   v2   v2       v2
-            qwen3         qwen3         auto    | jail  jail jail jail     jail
-            qwen3         qwen3         1       | jail  jail jail jail     jail
-            qwen3         qwen3         2       | v2    v2   v2   400      400
hermes       qwen3         qwen3         auto    | jail  jail jail jail     jail
hermes       qwen3         qwen3         1       | jail  jail jail jail     jail
hermes       qwen3         qwen3         2       | v2    v2   v2   v2       v2
qwen3_coder  qwen3         qwen3         auto    | v2    jail v2   jail     jail
qwen3_coder  qwen3         qwen3         1       | jail  jail jail jail     jail
qwen3_coder  qwen3         qwen3         2       | v2    v2   v2   v2       v2
"""

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}
CHOICES: dict[str, Any] = {
    "unset": None,
    "none": "none",
    "auto": "auto",
    "required": "required",
    "named": {"type": "function", "function": {"name": "get_weather"}},
}
ROUTES = {"jail": ("legacy_jail", 1), "v2": ("parser_v2", 2), "pass": ("pass_through", None)}


def _opt(cell: str) -> str | None:
    return None if cell == "-" else cell


def _cases() -> list[Any]:
    lines = [line for line in ROUTE_TABLE.strip().splitlines()[1:] if line.strip()]
    columns = list(CHOICES)
    cases = []
    for line in lines:
        left, right = line.split("|")
        tool, reasoning, family, version = left.split()
        cells = right.split()
        assert len(cells) == len(columns), line
        versions = ["unset", "auto"] if version == "auto" else [version]
        for env_value in versions:
            for choice, expected in zip(columns, cells, strict=True):
                case_id = f"{tool}+{reasoning}-V{env_value}-{choice}"
                cases.append(
                    pytest.param(
                        _opt(tool),
                        _opt(reasoning),
                        _opt(family),
                        env_value,
                        choice,
                        expected,
                        id=case_id,
                    )
                )
    return cases


CASES = _cases()


def test_table_covers_every_family_and_shape() -> None:
    # 1 no-parser deployment + 7 families x 3 shapes + Qwen3 (hermes or qwen3_coder tool
    # grammar: 2 tool-only, 1 reasoning-only, 2 both), each under unset, auto, 1 and 2, with
    # 5 tool_choice values.
    assert len(CASES) == (1 + 7 * 3 + 5) * 4 * 5
    shapes = {(p.values[2], p.values[0] is not None, p.values[1] is not None) for p in CASES}
    for family in FAMILIES:
        for shape in ((True, False), (False, True), (True, True)):
            assert (family.key, *shape) in shapes, (family.key, shape)
    tools = {p.values[0] for p in CASES} - {None}
    assert tools == {name.canonical for name in TOOL_PARSERS.values()}


@pytest.mark.parametrize(("tool", "reasoning", "family", "version", "choice", "expected"), CASES)
def test_route_table(
    tool: str | None,
    reasoning: str | None,
    family: str | None,
    version: str,
    choice: str,
    expected: str,
) -> None:
    environ = {} if version == "unset" else {"DYN_PARSER_VERSION": version}
    if expected == "cfg":
        with pytest.raises(ConfigError, match="DYN_PARSER_VERSION"):
            load_settings(environ, tool_parser=tool, reasoning_parser=reasoning)
        return
    settings = load_settings(environ, tool_parser=tool, reasoning_parser=reasoning)
    request: dict[str, Any] = {"messages": [{"role": "user", "content": "Weather?"}]}
    request["tools"] = [WEATHER]
    if CHOICES[choice] is not None:
        request["tool_choice"] = CHOICES[choice]
    if expected == "400":
        for decide in (select_route, plan_request):
            with pytest.raises(InvalidRequest, match="DYN_PARSER_VERSION=2") as err:
                decide(settings, request)
            assert err.value.param == "tool_choice"
        return
    kind, generation = ROUTES[expected]
    route = select_route(settings, request)
    assert (route.kind, route.generation) == (kind, generation)
    assert route.family == (family if kind != "pass_through" else None)
    assert plan_request(settings, request).route == kind


def test_the_default_table_is_what_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Qwen3-Coder default comes from `V2_DEFAULT_TOOL_PARSERS`: emptying it moves the
    route to V1, so a test asserting the default can fail."""
    settings = load_settings({}, tool_parser="qwen3_coder")
    assert select_route(settings, {}).kind == "parser_v2"
    monkeypatch.setattr(routing, "V2_DEFAULT_TOOL_PARSERS", frozenset())
    assert select_route(settings, {}).kind == "legacy_jail"
