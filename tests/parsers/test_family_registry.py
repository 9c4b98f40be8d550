"""The grammar registry (`parsers.families`): every registered parser name resolves through
its family module, and a module without the grammar fails with a ConfigError naming it."""

from __future__ import annotations

import importlib

import pytest

from parsers.errors import ConfigError
from parsers.families import reasoning_grammar, tool_grammar
from parsers.registry import REASONING_PARSERS, TOOL_PARSERS
from parsers.settings import family_by_key


def _grammar_module(key: str) -> str:
    family = family_by_key(key)
    assert family is not None
    return family.grammar_module


@pytest.mark.parametrize("name", sorted({p.canonical for p in TOOL_PARSERS.values()}))
def test_tool_grammar_resolves(name: str) -> None:
    module = importlib.import_module(TOOL_PARSERS[name].family.grammar_module)
    assert tool_grammar(name) is module.TOOL_GRAMMARS[name]


@pytest.mark.parametrize("name", sorted({p.canonical for p in REASONING_PARSERS.values()}))
def test_reasoning_grammar_resolves(name: str) -> None:
    module = importlib.import_module(REASONING_PARSERS[name].family.grammar_module)
    assert reasoning_grammar(name) is module.REASONING_GRAMMARS[name]


def test_missing_tool_grammar_names_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(_grammar_module("glm"))
    monkeypatch.delitem(module.TOOL_GRAMMARS, "glm47")
    with pytest.raises(ConfigError, match=r"^tool parser 'glm47' has no grammar yet$"):
        tool_grammar("glm47")


def test_missing_reasoning_grammar_names_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(_grammar_module("glm"))
    monkeypatch.delitem(module.REASONING_GRAMMARS, "glm45")
    with pytest.raises(ConfigError, match=r"^reasoning parser 'glm45' has no grammar yet$"):
        reasoning_grammar("glm45")
