"""V2 parser throughput: streaming in 1- and 4-character chunks against batch, and linearity.

Standalone: `python benchmarks/bench_parsers.py [--quick]`. For each family it times, side by
side in one run, the same output parsed in one piece (batch), in 4-character and 1-character
chunks, and a 10x longer output. Goals (issue 3): 4-char streaming >= 0.5x batch throughput;
10x output <= 11x the cost (linear: no re-scan of accumulated text per chunk).

Times are process CPU time (`time.process_time`), best of several interleaved rounds: on a
shared machine wall time mostly measures how often the scheduler preempts a long run.
Batch is the same engine fed the whole text at once; its prose scan runs in C (regex), so
batch is fast and the 4-char ratio mostly measures the fixed cost of one `feed` call.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standalone: the repo root

from parsers import StreamParser
from parsers.ids import counter_ids

BAR = "\uff5c"
PROSE = (
    "Let me think about this carefully. The user wants the weather in several cities, "
    'and they said "use metric units" — so I will call the tool for each city. '
)


def _hermes(i: int) -> str:
    return (
        f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "City {i} Zürich", '
        f'"days": {i % 7}, "units": ["C", "F"], "detail": {{"hourly": true, "n": 2.50}}}}}}\n'
        "</tool_call>\n"
    )


def _coder(i: int) -> str:
    return (
        f"<tool_call>\n<function=get_weather>\n<parameter=city>\nCity {i} Zürich\n</parameter>\n"
        f"<parameter=days>\n{i % 7}\n</parameter>\n<parameter=note>\n{PROSE}\n</parameter>\n"
        "</function>\n</tool_call>\n"
    )


def _glm(i: int) -> str:
    return (
        f"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>City {i}</arg_value>\n"
        f"<arg_key>note</arg_key>\n<arg_value>{PROSE}</arg_value>\n</tool_call>\n"
    )


def _dsml(i: int) -> str:
    t = f"<{BAR}DSML{BAR}"
    return (
        f'{t}tool_calls>\n{t}invoke name="get_weather">\n'
        f'{t}parameter name="city" string="true">City {i} {PROSE}</{BAR}DSML{BAR}parameter>\n'
        f'{t}parameter name="days" string="false">{i % 7}</{BAR}DSML{BAR}parameter>\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}tool_calls>\n"
    )


FAMILIES: dict[str, tuple[dict[str, Any], Callable[[int], str], str]] = {
    "hermes": ({"tool_parser": "hermes", "reasoning_parser": "qwen3"}, _hermes, "<think>"),
    "qwen3_coder": (
        {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
        _coder,
        "<think>",
    ),
    "glm47": ({"tool_parser": "glm47", "reasoning_parser": "glm45"}, _glm, "<think>"),
    "deepseek_v4": (
        {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4"},
        _dsml,
        "",
    ),
}


def output(make_call: Callable[[int], str], opener: str, units: int) -> str:
    """`units` blocks of reasoning, prose with quotes/code, and a call."""
    parts = []
    for i in range(units):
        parts.append(f"{opener}{PROSE}</think>" if opener or i == 0 else f"<think>{PROSE}</think>")
        parts.append(f"{PROSE}Use `<tool_call>` tags. ")
        parts.append(make_call(i))
    return "".join(parts)


def run_once(kw: dict[str, Any], text: str, size: int) -> float:
    """Seconds to feed `text` (in `size`-char chunks; 0 = one piece) and finish."""
    parser = StreamParser(generation=2, id_factory=counter_ids(), **kw)
    chunks = [text] if size <= 0 else [text[i : i + size] for i in range(0, len(text), size)]
    gc.disable()  # collector pauses are noise here, not parser cost
    try:
        start = time.process_time()
        for chunk in chunks:
            parser.feed(chunk)
        parser.finish()
        return time.process_time() - start
    finally:
        gc.enable()


def measure(kw: dict[str, Any], cases: dict[str, tuple[str, int]], repeat: int) -> dict[str, float]:
    """Best time per case; the cases are interleaved round by round so that load from other
    processes hits them alike."""
    times = {name: float("inf") for name in cases}
    for _ in range(repeat):
        for name, (text, size) in cases.items():
            times[name] = min(times[name], run_once(kw, text, size))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller outputs, fewer repeats")
    args = ap.parse_args()
    units, repeat = (8, 3) if args.quick else (30, 5)
    print(
        f"{'family':<12} {'chars':>7} {'batch MB/s':>10} {'4-char MB/s':>11} {'4-char':>7} "
        f"{'1-char':>7} {'us/feed':>7} {'10x batch':>9} {'10x 4-char':>10}"
    )
    ratio_ok = linear_ok = True
    for name, (kw, make_call, opener) in FAMILIES.items():
        text = output(make_call, opener, units)
        long_text = output(make_call, opener, units * 10)
        run_once(kw, text, 4)  # warm-up: imports, regex compilation, caches
        t = measure(
            kw,
            {
                "batch": (text, 0),
                "four": (text, 4),
                "one": (text, 1),
                "batch10": (long_text, 0),
                "four10": (long_text, 4),
            },
            repeat,
        )
        batch, four, one, batch10, four10 = (
            t["batch"],
            t["four"],
            t["one"],
            t["batch10"],
            t["four10"],
        )
        r4, r1 = batch / four, batch / one
        g_batch, g_four = batch10 / batch, four10 / four
        ratio_ok = ratio_ok and r4 >= 0.5
        linear_ok = linear_ok and g_batch <= 11 and g_four <= 11
        size = len(text.encode())
        per_feed = one / len(text) * 1e6
        print(
            f"{name:<12} {len(text):>7} {size / batch / 1e6:>10.2f} {size / four / 1e6:>11.2f} "
            f"{r4:>6.2f}x {r1:>6.2f}x {per_feed:>7.2f} {g_batch:>8.1f}x {g_four:>9.1f}x"
        )
    print(
        "4-char/1-char: throughput relative to batch (goal 4-char >= 0.5x); us/feed: cost of "
        "one 1-char feed; 10x: cost of a 10x longer output relative to 1x (goal <= 11x)"
    )
    print(f"linear (10x <= 11x): {'met' if linear_ok else 'NOT MET'}")
    print(f"4-char >= 0.5x batch: {'met' if ratio_ok else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
