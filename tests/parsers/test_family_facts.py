"""One place per family (docs/parsers-internals.md, "Adding a family"): every registered family
declares all its facts in its facts module, the registry/policy/routing/templates read them
from there, and no module outside the family's own names its markers."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import parsers
from parsers.families.base import ReasoningGrammar, ToolGrammar
from parsers.family import Family
from parsers.registry import FAMILIES, REASONING_PARSERS, TOOL_PARSERS
from sidecar.prompt import builtin_name

# where the packages under test live: the checkout, or site-packages inside the built image
ROOT = Path(parsers.__file__).resolve().parents[1]
FAMILY_DIR = ROOT / "parsers" / "families"
TEMPLATES = ROOT / "sidecar" / "templates"
# The family contract and helpers every family may use: not any one family's module.
SHARED = {"parsers.families", "parsers.families.base", "parsers.families.xmlargs"}
# A protocol token as written: `<think>`, `</tool_call>`, `<|channel>`, `<function=`,
# `<｜DSML｜ calls>` (DeepSeek V4.1 spaces its tags), ...
TOKEN = re.compile(r"</?[^<>\s][^<>\n]*[>=]")
IDS = [f.key for f in FAMILIES]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(module: str) -> set[str]:
    """`parsers.families.*` modules `module` imports, directly or through one another."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        source = importlib.util.find_spec(name)
        assert source is not None and source.origin is not None
        tree = ast.parse(Path(source.origin).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                todo += [m for m in found if m.startswith("parsers.families.") and _exists(m)]
    return seen


def _exists(module: str) -> bool:
    return (ROOT / Path(*module.split("."))).with_suffix(".py").exists()


def _family_modules(family: Family) -> set[str]:
    return {f"parsers.families.{family.key}_facts"} | (_imports(family.grammar_module) - SHARED)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple | frozenset):
        for item in value:
            yield from _strings(item)


def _markers(family: Family) -> set[str]:
    """The family's protocol tokens: its declared reasoning markers, what its grammar objects
    list, and every token-shaped constant of its own modules."""
    found: set[str] = set(family.reasoning_markers or ())
    grammars = importlib.import_module(family.grammar_module)
    tools = [grammars.TOOL_GRAMMARS[c] for _, c in family.tool_parsers]
    for grammar in [*tools, grammars.REASONING_GRAMMARS[family.reasoning_parser]]:
        if isinstance(grammar, ToolGrammar):
            found |= {*grammar.start_markers, *grammar.stray_markers, *grammar.pairing_openers}
            for start in grammar.start_markers:
                found |= set(grammar.jail_end_markers(start))
        if isinstance(grammar, ReasoningGrammar):
            found |= {*grammar.open_markers, *grammar.close_markers, *grammar.end_markers}
            found |= set(grammar.stray_markers)
    for name in _family_modules(family):
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.isupper():
                found |= {s for s in _strings(value) if TOKEN.fullmatch(s)}
    return {m for m in found if TOKEN.fullmatch(m)}


def _literals(path: Path) -> Iterator[tuple[int, str]]:
    """String constants of a source file, docstrings left out (prose may cite a marker)."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            yield node.lineno, node.value


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_every_family_declares_all_its_facts(family: Family) -> None:
    module = importlib.import_module(f"parsers.families.{family.key}_facts")
    assert module.FACTS is family  # declared in its own module, registered as is
    assert type(family) is Family
    assert family.title and family.generations and family.generations <= {1, 2}
    canonical = {c for _, c in family.tool_parsers}
    assert canonical and all(TOOL_PARSERS[name].family is family for name, _ in family.tool_parsers)
    assert REASONING_PARSERS[family.reasoning_parser].family is family
    grammars = importlib.import_module(family.grammar_module)
    assert canonical <= set(grammars.TOOL_GRAMMARS)
    assert family.reasoning_parser in grammars.REASONING_GRAMMARS
    patterns = family.prefill_patterns()
    assert patterns is not None, "no prefill patterns (declare `prefill` or reasoning markers)"
    for source in (patterns.opener, patterns.closer):
        re.compile(source)
    for template in {family.chat_template, *dict(family.tool_templates).values()}:
        assert (TEMPLATES / template).is_file(), template
    assert set(dict(family.tool_templates)) <= {name for name, _ in family.tool_parsers}
    assert family.v2_default_tools <= canonical
    assert "none" in family.efforts  # every family can turn thinking off
    if family.reasoning_markers is not None:
        reasoning = grammars.REASONING_GRAMMARS[family.reasoning_parser]
        assert (reasoning.open_markers, reasoning.close_markers) == family.think_markers()
    if family.leading_close_means_reasoning:
        assert family.reasoning_markers is not None  # the batch rule looks for them


def test_every_facts_module_is_registered() -> None:
    on_disk = sorted(p.name.removesuffix("_facts.py") for p in FAMILY_DIR.glob("*_facts.py"))
    assert on_disk == sorted(IDS)
    assert len({f.key for f in FAMILIES}) == len(FAMILIES)


@pytest.mark.parametrize("path", sorted(FAMILY_DIR.glob("*_facts.py")), ids=lambda p: p.stem)
def test_facts_modules_import_no_grammar_code(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert imported <= {"__future__", "parsers.family"}
    assert not any(isinstance(node, ast.Import) for node in ast.walk(tree))


def test_reading_the_registry_imports_no_grammar_module() -> None:
    # Settings, routing and policy read every family's facts; a process imports a grammar
    # only when it parses with it (the facts modules are light for that reason).
    code = (
        "import sys, parsers.settings, parsers.routing, parsers.policy, sidecar.prompt\n"
        "print(sorted(m for m in sys.modules if m.startswith('parsers.families.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    loaded = ast.literal_eval(out)  # a list of module names
    assert loaded == sorted(f"parsers.families.{k}_facts" for k in IDS)


def test_no_module_outside_a_family_names_its_markers() -> None:
    owners: dict[str, set[str]] = {}  # marker -> modules of the families declaring it
    for family in FAMILIES:
        mine = _family_modules(family)
        for marker in _markers(family):
            owners.setdefault(marker, set()).update(mine)
    assert "<think>" in owners and "<|channel>" in owners  # the collection found markers
    stray: list[str] = []
    for path in sorted([*ROOT.glob("parsers/**/*.py"), *ROOT.glob("sidecar/**/*.py")]):
        name = _module_name(path)
        for line, text in _literals(path):
            for marker, allowed in owners.items():
                if marker in text and name not in allowed:
                    stray.append(f"{path.relative_to(ROOT)}:{line} names {marker!r}")
    assert stray == []


def test_the_test_sees_a_stray_marker(tmp_path: Path) -> None:
    # The literal scan above must be able to fail: a copy of a marker in code is found, the
    # same text in a docstring is not.
    source = '"""Cites `<think>`."""\nOPEN = "<think>"\n'
    (tmp_path / "m.py").write_text(source)
    assert [text for _, text in _literals(tmp_path / "m.py")] == ["<think>"]


def test_template_and_thinking_facts_reach_their_readers() -> None:
    qwen3 = next(f for f in FAMILIES if f.key == "qwen3")
    assert builtin_name("qwen3", "qwen3_coder") == dict(qwen3.tool_templates)["qwen3_coder"]
    assert builtin_name("qwen3", "hermes") == qwen3.chat_template
    assert builtin_name(None, None) == "chatml.jinja"
    assert qwen3.template_for("hermes") == "qwen3.jinja"
    assert qwen3.template_for(None) == "qwen3.jinja"
