"""A corpus of parser cases and their results, one JSON line per case, for comparing two
interpreters: `python tests/parsers/corpus.py > results.jsonl`.

The cases are the suite's own (every family's samples, quoted openers and lossless call
pieces in `parser_samples`, both generations), each parsed in batch and streamed by
character, in thirds and in 7-character chunks, plus quoted-marker prose and long repeated
shapes. The output holds every result field (content, reasoning, calls, finish reason,
route), so two runs are compared line by line: `tests/buildtool/images/test_shipped_parsers.py`
runs it in the built image (Debian 12's Python) and on the host.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # parser_samples, run as a script

from parser_samples import all_lossless, all_openers, all_samples

from parsers import ParsedMessage, parse, stream
from parsers.ids import counter_ids

PROSE = (
    'The literal "{m}" marker is part of the explanation.',
    "Use `{m}` to start a call.",
    "The tag '{m}' starts it; it's fine.",
    "Example:\n```\n{m}\n```\nEnd.",
    'She said "hi" and then {m} followed, "quoted" too.',
    "It's {m}'s turn",
)


def _chunkings(text: str) -> Iterator[tuple[str, list[str]]]:
    yield "chars", list(text)
    third = max(len(text) // 3, 1)
    yield "thirds", [text[:third], text[third : 2 * third], text[2 * third :]]
    yield "seven", [text[i : i + 7] for i in range(0, len(text), 7)] or [""]


def _result(msg: ParsedMessage) -> dict[str, Any]:
    return {
        "content": msg.content,
        "reasoning": msg.reasoning_content,
        "calls": [[c.id, c.name, c.arguments] for c in msg.tool_calls],
        "finish": msg.finish_reason,
        "route": msg.route,
    }


def _error(exc: Exception) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}"}


def _cases() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(case id, text, parse keywords) for every case of the corpus."""
    for s in all_samples():
        for gen in s.generations:
            yield f"sample {s.id} v{gen}", s.text, s.kwargs(gen)
    for n, o in enumerate(all_openers()):
        for gen in (1, 2):
            kw = {
                "tool_parser": o.tool_parser,
                "reasoning_parser": o.reasoning_parser,
                "thinking": o.thinking,
                "prompt": o.prompt,
                "generation": gen,
            }
            for k, template in enumerate(PROSE):
                yield f"opener {n} prose {k} v{gen}", template.format(m=o.opener), kw
    for n, x in enumerate(all_lossless()):
        for gen in x.generations:
            kw = {
                "tool_parser": x.tool_parser,
                "reasoning_parser": x.reasoning_parser,
                "prompt": x.prompt,
                "generation": gen,
                "tools": _tools(x.calls),
            }
            pieces = [c.markup for c in x.calls]
            joined = "Before. " + " then ".join(pieces) + " After."
            yield f"lossless {n} calls v{gen}", joined, kw
            yield f"lossless {n} repeated v{gen}", ("x " + pieces[0]) * 40 if pieces else "", kw
            if x.reasoning is not None:
                start, end = x.reasoning
                text = f'{start}Think "{end}" twice.{end}Answer: "{pieces[0] if pieces else ""}"'
                yield f"lossless {n} reasoning v{gen}", text, kw
            for b, broken in enumerate(x.broken):
                yield f"lossless {n} broken {b} v{gen}", f"Text {broken} more text", kw


def _tools(calls: Any) -> list[dict[str, Any]] | None:
    names = sorted({c.name for c in calls})
    if not names:
        return None
    return [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in names
    ]


def run() -> Iterator[dict[str, Any]]:
    for case, text, kw in _cases():
        for reason in ("stop", "length"):
            key = f"{case} {reason}"
            try:
                yield {"case": key, "how": "batch", **_result(_parse(text, reason, kw))}
            except Exception as exc:  # a raise is a result too: compared like the others
                yield {"case": key, "how": "batch", **_error(exc)}
            for how, chunks in _chunkings(text):
                try:
                    got = stream(chunks, finish_reason=reason, id_factory=counter_ids(), **kw)
                    yield {"case": key, "how": how, **_result(got)}
                except Exception as exc:
                    yield {"case": key, "how": how, **_error(exc)}


def _parse(text: str, reason: str, kw: dict[str, Any]) -> ParsedMessage:
    return parse(text, finish_reason=reason, id_factory=counter_ids(), **kw)


def main() -> int:
    out = sys.stdout
    for row in run():
        out.write(json.dumps(row, ensure_ascii=True, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
