"""Registry of per-family sample outputs for the shared property tests.

Every module in this package (one per family, e.g. `qwen3.py`, `kimi_k2.py`) exports
`SAMPLES: list[Sample]`, `OPENERS: list[Opener]` and `LOSSLESS: list[Lossless]`. The shared
tests (test_chunking.py, test_lossless.py, test_quoted.py, test_v1_v2_differ.py) iterate over
all of them, so adding a family's samples here is all it takes to put it under those
properties.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any

from parsers.api import parse, stream
from parsers.ids import counter_ids
from parsers.types import ParsedMessage


@dataclass(frozen=True)
class Sample:
    """One representative model output and the request it answers."""

    id: str  # test id, e.g. "hermes-two-calls"
    text: str
    tool_parser: str | None
    reasoning_parser: str | None = None
    generations: tuple[int, ...] = (1, 2)
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = None
    thinking: bool | None = None
    prompt: str | None = None
    calls: int | None = None  # expected number of parsed calls (checked in both generations)
    extra: dict[str, Any] = field(default_factory=dict)  # more request fields

    def kwargs(self, generation: int) -> dict[str, Any]:
        return {
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "tools": list(self.tools) or None,
            "tool_choice": self.tool_choice,
            "thinking": self.thinking,
            "prompt": self.prompt,
            "generation": generation,
            "request": self.extra or None,
        }

    def batch(self, generation: int, finish_reason: str = "stop") -> ParsedMessage:
        return parse(
            self.text,
            finish_reason=finish_reason,
            id_factory=counter_ids(),
            **self.kwargs(generation),
        )

    def streamed(
        self, chunks: list[str], generation: int, finish_reason: str = "stop"
    ) -> ParsedMessage:
        return stream(
            chunks, finish_reason=finish_reason, id_factory=counter_ids(), **self.kwargs(generation)
        )


@dataclass(frozen=True)
class Opener:
    """A family's call (or reasoning) opener for the quoted-marker test (V2)."""

    tool_parser: str | None
    reasoning_parser: str | None
    opener: str
    thinking: bool | None = None
    prompt: str | None = None
    is_call: bool = True  # False for a reasoning opener (V1 parses those, quoted or not)


@dataclass(frozen=True)
class CallPiece:
    """A well-formed call as the model writes it, and what it must parse to."""

    markup: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Lossless:
    """What the lossless property test may interleave for one tool/reasoning parser pair."""

    tool_parser: str | None
    reasoning_parser: str | None
    calls: tuple[CallPiece, ...]
    reasoning: tuple[str, str] | None = ("<think>", "</think>")  # open, close markers
    quoted: tuple[str, ...] = ()  # markers the test wraps in quotes / code spans (V2)
    generations: tuple[int, ...] = (1, 2)
    prompt: str | None = None  # e.g. a prompt that does not prefill reasoning
    # output starts inside reasoning (forced families): the test opens with `text` + close
    lead_reasoning: bool = False
    # calls that must not parse (blank name, broken header, no tool name): their text is content,
    # only the family's markup (`markup`, a regex) may be dropped from it (docs/parsers.md,
    # "Content hygiene")
    broken: tuple[str, ...] = ()
    markup: str = r"<[^<>]*>"


def _modules() -> list[Any]:
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
    ]


def all_samples() -> list[Sample]:
    return [s for mod in _modules() for s in getattr(mod, "SAMPLES", [])]


def all_openers() -> list[Opener]:
    return [o for mod in _modules() for o in getattr(mod, "OPENERS", [])]


def all_lossless() -> list[Lossless]:
    return [x for mod in _modules() for x in getattr(mod, "LOSSLESS", [])]


def sample_cases() -> list[tuple[Sample, int]]:
    """(sample, generation) pairs, for parametrize."""
    return [(s, g) for s in all_samples() for g in s.generations]


def case_id(case: Any) -> str:
    if isinstance(case, tuple):
        return f"{case[0].id}-v{case[1]}"
    return str(case)
