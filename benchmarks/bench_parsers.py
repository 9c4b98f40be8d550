"""V2 parser throughput: streaming in 1- and 4-character chunks against batch, and linearity.

Standalone: `python benchmarks/bench_parsers.py [--quick]`. For each family it times, side by
side in one run, the same output parsed in one piece (batch), in 4-character and 1-character
chunks, and a 10x longer output. Goals: 4-char streaming >= 0.5x batch throughput;
10x output <= 11x the cost (linear: no re-scan of accumulated text per chunk).

Times are process CPU time (`time.process_time`), best of several interleaved rounds: on a
shared machine wall time mostly measures how often the scheduler preempts a long run.
Batch is `parsers.api.parse_text` on the whole text (what `parsers.parse` and the sidecar's
non-streamed responses run: the whole-output batch path, `parsers/batch.py`, where it decides,
else the runner fed the whole text at once), its plan built before the clock starts. Its prose
scan runs in C (regex), so batch is fast and the 4-char ratio mostly measures the fixed
cost of one `feed` call. The
`bound` column puts a number on that: the ratio a stream would reach if each feed cost only
batch's own work plus the cheapest feed there is (measured here: 4-char plain prose through
`StreamParser.feed`, the fast path: look for a character that matters, keep the quote state
and the blank rule, build the Delta). Where it is below 0.5x, the goal is out of reach whatever
the scanners do, unless that cheapest feed gets cheaper still. The `limit` column is the same
with the least any per-chunk API returning `list[Delta]` must spend (a call that builds one
Delta and its list, nothing else): no pure-Python design gets past it. `ours/floor` is batch
against the least a whole-output parser does (one regex per block kind, `json.loads` per call;
goal >= 1.0x), the median of rounds paired as in the growth figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standalone: the repo root

from parsers import StreamParser
from parsers.api import make_plan, parse_text
from parsers.batch import BatchPath
from parsers.ids import counter_ids
from parsers.plan import ParsePlan
from parsers.types import Delta, content_delta

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


def _kimi_k2(i: int) -> str:
    return (
        f"<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:{i}"
        f'<|tool_call_argument_begin|>{{"city": "City {i} Zürich", "days": {i % 7}, '
        f'"units": ["C", "F"], "note": {json.dumps(PROSE, ensure_ascii=False)}}}<|tool_call_end|>\n'
        "<|tool_calls_section_end|>\n"
    )


def _gemma4(i: int) -> str:
    q = '<|"|>'  # Gemma's string delimiter
    return (
        f"<|tool_call>call:get_weather{{city:{q}City {i} Zürich{q},days:{i % 7},"
        f"units:[{q}C{q},{q}F{q}],note:{q}{PROSE}{q}}}<tool_call|>\n"
    )


def _k3(name: str, body: str, **attrs: str) -> str:
    head = "".join(f' {k}="{v}"' for k, v in attrs.items())
    return f"<|open|>{name}{head}<|sep|>{body}<|close|>{name}<|sep|>"


def _kimi_k3(i: int) -> str:
    """One whole unit (Kimi K3 is a channel grammar): think, response, a tools block."""
    args = _k3("argument", f"City {i} Zürich", key="city", type="string") + _k3(
        "argument", str(i % 7), key="days", type="number"
    )
    note = _k3("argument", PROSE, key="note", type="string")
    call = _k3("call", args + note, tool="get_weather", index="1")
    return (
        _k3("think", PROSE) + _k3("response", f"{PROSE}Use `<|open|>` tags. ") + _k3("tools", call)
    )


def think_units(make_call: Callable[[int], str], opener: str, quoted: str) -> Callable[[int], str]:
    """Units of `<think>` reasoning (`opener`: how the first opens; "" = output starts in
    reasoning), prose quoting the family's call opener (`quoted`), and a call."""

    def unit(i: int) -> str:
        head = f"{opener}{PROSE}</think>" if opener or i == 0 else f"<think>{PROSE}</think>"
        return f"{head}{PROSE}Use `{quoted}` tags. {make_call(i)}"

    return unit


def _gemma4_unit(i: int) -> str:
    return f"<|channel>thought\n{PROSE}<channel|>{PROSE}Use `<|tool_call>` tags. {_gemma4(i)}"


def _muse(i: int) -> str:
    """One whole unit (Muse is a channel grammar): reasoning, content quoting the header
    marker, a tool message with one ATEM invoke (the first unit continues the prompt's
    `<|start|>assistant`)."""
    head = "" if i == 0 else "<|start|>assistant"
    params = (
        f'<atem:parameter name="city">City {i} Zürich</atem:parameter>\n'
        f'<atem:parameter name="days">{i % 7}</atem:parameter>\n'
        f'<atem:parameter name="note">{PROSE}</atem:parameter>\n'
    )
    return (
        f"{head} to=self<|message|>{PROSE}<|eom|>"
        f"<|start|>assistant to=user<|message|>{PROSE}Use `<|start|>` tags.<|eom|>"
        "<|start|>assistant to=get_weather<|message|><atem:function_calls>\n"
        f'<atem:invoke name="get_weather">\n{params}</atem:invoke>\n'
        "</atem:function_calls><|eom|>"
    )


FAMILIES: dict[str, tuple[dict[str, Any], Callable[[int], str]]] = {
    "hermes": (
        {"tool_parser": "hermes", "reasoning_parser": "qwen3"},
        think_units(_hermes, "<think>", "<tool_call>"),
    ),
    "qwen3_coder": (
        {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
        think_units(_coder, "<think>", "<tool_call>"),
    ),
    "glm47": (
        {"tool_parser": "glm47", "reasoning_parser": "glm45"},
        think_units(_glm, "<think>", "<tool_call>"),
    ),
    "deepseek_v4": (
        {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4"},
        think_units(_dsml, "", "<tool_call>"),
    ),
    "kimi_k2": (
        {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25"},
        think_units(_kimi_k2, "<think>", "<|tool_calls_section_begin|>"),
    ),
    "gemma4": (
        {"tool_parser": "gemma4", "reasoning_parser": "gemma4", "thinking": True},
        _gemma4_unit,
    ),
    "kimi_k3": ({"tool_parser": "kimi_k3", "reasoning_parser": "kimi_k3"}, _kimi_k3),
    "muse": ({"tool_parser": "muse", "reasoning_parser": "muse"}, _muse),
}


# Adversarial shapes: repeated openers, unclosed structures, long runs of
# separators, per family; then what a model caught in a loop writes: calls or their openers
# repeated without the end marker, closers repeated after a cut call (each was quadratic
# somewhere before it was in this table). Each maker gives the text for a repeat count `k`.
Shape = Callable[[int], str]
_SB, _CB = "<|tool_calls_section_begin|>", "<|tool_call_begin|>"
_AB, _CE = "<|tool_call_argument_begin|>", "<|tool_call_end|>"
_DS4, _DS41 = f"<{BAR}DSML{BAR}", f"<{BAR}DSML{BAR} "
_HERMES_CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}'
_CODER_CALL = "<tool_call><function=f>\n<parameter=a>\n1\n</parameter></function>"
V2_ONLY = ("muse", "deepseek_v41")
# a declared tool: DSML takes an invoke without its block start as a call only for one
_F = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
ADVERSARIAL: dict[str, tuple[dict[str, Any], dict[str, Shape]]] = {
    "hermes": (
        {"tool_parser": "hermes", "reasoning_parser": "qwen3"},
        {
            "openers": lambda k: "<tool_call>" * k,
            "nested [": lambda k: '<tool_call>{"name": "f", "arguments": ' + "[" * k,
            "think opens": lambda k: "<think>" * k,
            "'<' run": lambda k: "<" * k,
            # long runs where held text was rescanned (or grown with +=) per chunk
            "lead blanks": lambda k: " " * k + "<think>",
            "blanks after": lambda k: '<tool_call>{"name": "f", "arguments": {"a": 1}}' + " " * k,
            "blanks in args": lambda k: '<tool_call>{"name": "f", "arguments": {"a":' + " " * k,
            "digits": lambda k: '<tool_call>{"name": "f", "arguments": {"a": ' + "1" * k,
            "unclosed calls": lambda k: _HERMES_CALL * k,
            "closes after call": lambda k: _HERMES_CALL + "</think>" * k,
        },
    ),
    "qwen3_coder": (
        {"tool_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
        {
            "openers": lambda k: "<tool_call>" * k,
            "<function=": lambda k: "<function=" * k,
            "params": lambda k: (
                "<tool_call>\n<function=f>\n<parameter=a>\n" + "<parameter=b>\n" * k
            ),
            "closes": lambda k: "<tool_call>\n<function=f>\n<parameter=a>\n" + "</parameter>\n" * k,
            "blanks in call": lambda k: "<tool_call>\n<function=f>" + " " * k,
            "held value": lambda k: (
                "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n<parameter=" + "a" * k
            ),
            "unclosed calls": lambda k: _CODER_CALL * k,
            "function ends": lambda k: (
                "<tool_call><function=f>\n<parameter=a>"
                + "\n<parameter=a>\n1\n</parameter></function>" * k
            ),
            "nested params": lambda k: (
                "<tool_call><function=f>"
                + "r</think><tool_call><function=f>\n<parameter=a>\n1\n" * k
            ),
        },
    ),
    "glm47": (
        {"tool_parser": "glm47", "reasoning_parser": "glm45"},
        {
            "openers": lambda k: "<tool_call>" * k,
            "keys": lambda k: "<tool_call>f" + "<arg_key>" * k,
            "cut closes": lambda k: (
                "<tool_call>f<arg_key>a</arg_key><arg_value>" + "</arg_value" * k
            ),
            "key blanks": lambda k: "<tool_call>f<arg_key>" + " " * k,
            "unclosed calls": lambda k: (
                "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>" * k
            ),
            "key/value closes": lambda k: "<think>r" + "a</arg_key><arg_value>1" * k,
        },
    ),
    "deepseek_v4": (
        {"tool_parser": "deepseek_v4", "reasoning_parser": "deepseek_v4", "tools": _F},
        {
            "blocks": lambda k: f"<{BAR}DSML{BAR}tool_calls>" * k,
            "invokes": lambda k: (
                f"<{BAR}DSML{BAR}tool_calls>" + f'<{BAR}DSML{BAR}invoke name="' * k
            ),
            "orphans": lambda k: f'<{BAR}DSML{BAR}invoke name="f">' * k,
            "value blanks": lambda k: (
                f'<{BAR}DSML{BAR}tool_calls><{BAR}DSML{BAR}invoke name="f">'
                f'<{BAR}DSML{BAR}parameter name="a" string="true">x' + " " * k
            ),
            "closes after cut": lambda k: (
                f'{_DS4}tool_calls>{_DS4}invoke name="f">{_DS4}parameter name="a" string="true">x'
                + f"</{BAR}DSML{BAR}invoke>" * k
            ),
            "unclosed invokes": lambda k: f'{_DS4}invoke name="f">x' * k,
            "orphan values": lambda k: (
                f'{_DS4}invoke name="f">{_DS4}parameter name="a" string="true">x' * k
            ),
        },
    ),
    "deepseek_v41": (
        {"tool_parser": "deepseek_v41", "reasoning_parser": "deepseek_v41", "tools": _F},
        {
            "blocks": lambda k: f"{_DS41}calls>" * k,
            "invokes": lambda k: f"{_DS41}calls>" + f'{_DS41}invoke name="' * k,
            "closes after cut": lambda k: (
                f'{_DS41}calls>{_DS41}invoke name="f">{_DS41}parameter name="a" string="true">x'
                + f"</{BAR}DSML{BAR} invoke>" * k
            ),
            "unclosed invokes": lambda k: f'{_DS41}invoke name="f">x' * k,
            "orphan values": lambda k: (
                f'{_DS41}invoke name="f">{_DS41}parameter name="a" string="true">x' * k
            ),
        },
    ),
    "kimi_k2": (
        {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k25"},
        {
            "call openers": lambda k: "<|tool_calls_section_begin|>" + "<|tool_call_begin|>" * k,
            "sections": lambda k: "<|tool_calls_section_begin|>" * k,
            "long header": lambda k: "<|tool_calls_section_begin|><|tool_call_begin|>" + "a" * k,
            "section blanks": lambda k: "<|tool_calls_section_begin|>x" + " " * k,
            "section+call openers": lambda k: (_SB + _CB + "functions.f:0" + _AB) * k,
            "bare call openers": lambda k: (_CB + "functions.f:0" + _AB) * k,
            "calls, no section end": lambda k: (
                (_SB + _CB + "functions.f:0" + _AB + '{"a": 1}' + _CE) * k
            ),
        },
    ),
    "gemma4": (
        {"tool_parser": "gemma4", "reasoning_parser": "gemma4"},
        {
            "'a:' run": lambda k: "<|tool_call>call:f{" + "a:" * k,
            "openers": lambda k: "<|tool_call>" * k,
            "braces": lambda k: "<|tool_call>call:f{" + "{" * k,
            "channels": lambda k: "<|channel>" * k,
            "key run": lambda k: "<|tool_call>call:f{" + "a" * k,
            "unclosed calls": lambda k: "<|tool_call>call:f{a:1}" * k,
            "closes": lambda k: "<|tool_call>call:f{a:1}" + "<tool_call|>" * k,
        },
    ),
    "kimi_k3": (
        {"tool_parser": "kimi_k3", "reasoning_parser": "kimi_k3"},
        {
            "opens": lambda k: "<|open|>" * k,
            "calls": lambda k: "<|open|>tools<|sep|>" + '<|open|>call tool="f"<|sep|>' * k,
            "seps": lambda k: "<|sep|>" * k,
            "tools blanks": lambda k: "<|open|>tools<|sep|>x" + " " * k,
            "nameless calls": lambda k: "<|open|>call<|sep|>x" * k,
            "call closes": lambda k: '<|open|>call tool="f"<|sep|>' + "<|close|>call<|sep|>" * k,
        },
    ),
    "muse": (
        {"tool_parser": "muse", "reasoning_parser": "muse"},
        {
            "starts": lambda k: "<|start|>" * k,
            "invokes": lambda k: " to=f<|message|>" + '<atem:invoke name="f">' * k,
            "headers": lambda k: " to=f<|message|>" * k,
            "prose blanks": lambda k: "Hi" + " " * k,
            "tool text": lambda k: " to=f<|message|><atem:function_calls>" + "a" * k,
            "eoms": lambda k: " to=user<|message|>x" + "<|eom|>" * k,
            "tool messages": lambda k: (
                '<|start|>assistant to=f<|message|><atem:invoke name="f">' * k
            ),
        },
    ),
}


GROWTH = 4  # the big text is this many times the small one
GROWTH_GOAL = 4.5  # linear: the big text costs at most this many times the small one


def adversarial(
    chars: int, rounds: int, stream_chars: int, families: list[str] | None = None
) -> bool:
    """Growth of the cost from ~`chars` to `GROWTH` x that, per shape, family and generation,
    whole (batch), and streamed in 4-character chunks from ~`stream_chars`; prints the worst
    shape per family and mode. True when every growth is within `GROWTH_GOAL`.

    The machine's speed drifts by up to 1.7x over seconds here (a shared VM), so the best small
    and best big times of separate rounds can come from different speeds. Each round therefore
    times the big text between two runs of the small one (`GROWTH` parses each, about as long
    as one big parse), and the growth is the median over the rounds of big / mean(small before,
    small after): a drift cancels within a round, and one slow round does not decide."""
    print(
        f"\nadversarial shapes: cost of {GROWTH}x the input (batch ~{chars} -> "
        f"~{chars * GROWTH} chars, 4-char stream ~{stream_chars} -> ~{stream_chars * GROWTH} "
        f"chars; median of {rounds} paired rounds)"
    )
    print(
        f"{'family':<12} {'mode':<6} {'worst shape':<21} {'gen':>3} {'1x ms':>8} "
        f"{f'{GROWTH}x ms':>8} {'growth':>7} {'rounds':>11}"
    )
    ok = True
    for family, (kw, shapes) in ADVERSARIAL.items():
        if families and family not in families:
            continue
        for mode, size, base in (("batch", 0, chars), ("stream", 4, stream_chars)):
            worst: tuple[float, str, int, float, float, list[float]] | None = None
            for shape, make in shapes.items():
                k = max(base // max(len(make(1)) - len(make(0)), 1), 1)
                small, big = make(k), make(k * GROWTH)
                for gen in (2,) if family in V2_ONLY else (1, 2):
                    found = _paired_growth(
                        {**kw, "generation": gen}, small, big, size, rounds, GROWTH
                    )
                    if worst is None or found[0] > worst[0]:
                        worst = (found[0], shape, gen, *found[1:])
            assert worst is not None
            growth, shape, gen, t1, tbig, growths = worst
            ok = ok and growth <= GROWTH_GOAL
            spread = f"{min(growths):.1f}-{max(growths):.1f}x"
            print(
                f"{family:<12} {mode:<6} {shape:<21} {gen:>3} {t1 * 1e3:>8.2f} "
                f"{tbig * 1e3:>8.2f} {growth:>6.1f}x {spread:>11}"
            )
    print(
        f"growth: median over the rounds of the {GROWTH}x time / the mean of the 1x times timed "
        "just before and after it; rounds: the least and greatest round"
    )
    print(
        f"linear on adversarial input ({GROWTH}x <= {GROWTH_GOAL}x): {'met' if ok else 'NOT MET'}"
    )
    return ok


_MIN_SAMPLE = 0.005  # seconds: the least a timed sample of the big text should take


def _paired_growth(
    kw: dict[str, Any], small: str, big: str, size: int, rounds: int, times: int = 10
) -> tuple[float, float, float, list[float]]:
    """(median growth, best small time, best big time, each round's growth) of parsing `big`
    against `small` under `kw` (which names the generation), whole (size 0) or in
    `size`-character chunks; `big` is `times` x `small` (see `adversarial`)."""

    def timed(text: str, times: int) -> float:
        return run_gen(kw, text, times) if size == 0 else run_chunked(kw, text, size, times)

    timed(small, 1)  # warm-up
    # A big parse under a few milliseconds is timed as several (so is the small one, `times`
    # as many), or the timer's and the allocator's fixed costs decide the ratio.
    reps = max(1, min(50, int(_MIN_SAMPLE / max(timed(big, 1), 1e-6))))
    growths: list[float] = []
    t1s: list[float] = []
    tbigs: list[float] = []
    for _ in range(rounds):
        before = timed(small, times * reps)
        tbig = timed(big, reps)
        t1 = (before + timed(small, times * reps)) / 2
        growths.append(tbig / t1)
        t1s.append(t1)
        tbigs.append(tbig)
    return statistics.median(growths), min(t1s), min(tbigs), growths


def run_chunked(kw: dict[str, Any], text: str, size: int, times: int = 1) -> float:
    """Seconds per streamed parse of `text` in `size`-character chunks under `kw` (which
    names the generation); `times` parsers made before the clock starts."""
    parsers = [StreamParser(id_factory=counter_ids(), **kw) for _ in range(times)]
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    gc.disable()  # collector pauses are noise here, not parser cost
    try:
        start = time.process_time()
        for parser in parsers:
            for chunk in chunks:
                parser.feed(chunk)
            parser.finish()
        return (time.process_time() - start) / times
    finally:
        gc.enable()


def run_gen(kw: dict[str, Any], text: str, times: int = 1) -> float:
    """Seconds per batch parse of `text` under `kw` (which names the generation)."""
    return run_batch(make_plan(**kw), text, times)


# --- the floor: whole-output parsing the way it is usually written ------------------------
# One compiled regex over the output for the reasoning block and one for the call blocks, then
# json.loads (or the family's key/value split) per call, arguments written back with
# json.dumps; content is the text with those blocks cut out. No quote awareness, no
# streaming, no schema: the least a whole-output parser does.
_THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)
_FLOOR_RE: dict[str, re.Pattern[str]] = {
    "hermes": re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S),
    "qwen3_coder": re.compile(
        r"<tool_call>\s*<function=(.*?)>(.*?)</function>\s*</tool_call>", re.S
    ),
    "glm47": re.compile(r"<tool_call>([\w.-]+.*?)</tool_call>", re.S),
    "deepseek_v4": re.compile(
        rf"<{BAR}DSML{BAR}invoke name=\"(.*?)\">(.*?)</{BAR}DSML{BAR}invoke>", re.S
    ),
    "kimi_k2": re.compile(
        r"<\|tool_call_begin\|>\s*(.+?)\s*<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>",
        re.S,
    ),
    "gemma4": re.compile(r"<\|tool_call>call:([\w.-]+)\{(.*?)\}<tool_call\|>", re.S),
    "kimi_k3": re.compile(
        r'<\|open\|>call tool="(.*?)"[^<]*<\|sep\|>(.*?)<\|close\|>call<\|sep\|>', re.S
    ),
    "muse": re.compile(r'<atem:invoke name="(.*?)">(.*?)</atem:invoke>', re.S),
}
_QC_PARAM = re.compile(r"<parameter=(.*?)>\n?(.*?)\n?</parameter>", re.S)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)
_DSML_PARAM = re.compile(
    rf'<{BAR}DSML{BAR}parameter name="(.*?)" string="(true|false)">(.*?)</{BAR}DSML{BAR}parameter>',
    re.S,
)
_GEMMA_ARG = re.compile(r'([\w.-]+):(?:<\|"\|>(.*?)<\|"\|>|(\[.*?\])|([^,}\]]+))', re.S)
_K3_ARG = re.compile(
    r'<\|open\|>argument key="(.*?)" type="(.*?)"<\|sep\|>(.*?)<\|close\|>argument<\|sep\|>', re.S
)
_K3_THINK = re.compile(r"<\|open\|>think<\|sep\|>(.*?)<\|close\|>think<\|sep\|>", re.S)
_K3_RESPONSE = re.compile(r"<\|open\|>response<\|sep\|>(.*?)<\|close\|>response<\|sep\|>", re.S)
_GEMMA_THOUGHT = re.compile(r"<\|channel>thought\n(.*?)<channel\|>", re.S)
_MUSE_ARG = re.compile(r'<atem:parameter name="(.*?)">(.*?)</atem:parameter>', re.S)
_MUSE_SELF = re.compile(r"to=self<\|message\|>(.*?)<\|eo[mt]\|>", re.S)
_MUSE_USER = re.compile(r"to=user<\|message\|>(.*?)<\|eo[mt]\|>", re.S)


def _json_or(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _floor_args(family: str, m: re.Match[str]) -> tuple[str, str]:
    if family == "hermes":
        obj = json.loads(m.group(1))
        return obj["name"], json.dumps(obj.get("arguments", {}), ensure_ascii=False)
    if family == "qwen3_coder":
        args = {k.strip(): v for k, v in _QC_PARAM.findall(m.group(2))}
        return m.group(1).strip(), json.dumps(args, ensure_ascii=False)
    if family == "glm47":
        body = m.group(1)
        name = body.split("<arg_key>", 1)[0].strip()
        args = {k: _json_or(v) for k, v in _GLM_ARG.findall(body)}
        return name, json.dumps(args, ensure_ascii=False)
    if family == "deepseek_v4":
        args = {
            k: v.strip() if st == "true" else _json_or(v)
            for k, st, v in _DSML_PARAM.findall(m.group(2))
        }
        return m.group(1), json.dumps(args, ensure_ascii=False)
    if family == "kimi_k2":
        name = m.group(1).split(".", 1)[-1].rsplit(":", 1)[0]
        return name, json.dumps(json.loads(m.group(2)), ensure_ascii=False)
    if family == "gemma4":
        args = {}
        for k, string, array, bare in _GEMMA_ARG.findall(m.group(2)):
            args[k] = (
                string
                if string
                else (_json_or(array.replace('<|"|>', '"')) if array else _json_or(bare))
            )
        return m.group(1), json.dumps(args, ensure_ascii=False)
    if family == "muse":
        args = {k: _json_or(v) for k, v in _MUSE_ARG.findall(m.group(2))}
        return m.group(1), json.dumps(args, ensure_ascii=False)
    args = {k: v if t == "string" else _json_or(v) for k, t, v in _K3_ARG.findall(m.group(2))}
    return m.group(1), json.dumps(args, ensure_ascii=False)


def floor_parse(family: str, text: str) -> tuple[str, str, list[tuple[str, str]]]:
    """(content, reasoning, calls) of `text`, parsed the usual whole-output way."""
    if family == "kimi_k3":
        reasoning = "".join(_K3_THINK.findall(text))
        content = "".join(_K3_RESPONSE.findall(text))
    elif family == "muse":
        reasoning = "".join(_MUSE_SELF.findall(text))
        content = "".join(_MUSE_USER.findall(text))
    else:
        think = _GEMMA_THOUGHT if family == "gemma4" else _THINK_RE
        reasoning = "".join(think.findall(text))
        content = think.sub("", text)
    rx = _FLOOR_RE[family]
    calls = [_floor_args(family, m) for m in rx.finditer(text)]
    if family not in ("kimi_k3", "muse"):
        content = rx.sub("", content)
    return content, reasoning, calls


def floor_ratios(
    family: str, kw: dict[str, Any], text: str, rounds: int
) -> tuple[float, list[float], float]:
    """(median, per-round) floor time / batch time, and the median floor / machine time (batch
    path off), paired per round: each round times batch and the machine between two floor runs
    and divides by their mean, so a drift of the machine's speed cancels within a round."""
    plan = make_plan(generation=2, **kw)
    ours: list[float] = []
    machine: list[float] = []
    for _ in range(rounds):
        before = time_floor(family, text, 10)
        batch = run_batch(plan, text, 10)
        whole = time_machine(kw, text, 10)
        floor = (before + time_floor(family, text, 10)) / 2
        ours.append(floor / batch)
        machine.append(floor / whole)
    return statistics.median(ours), ours, statistics.median(machine)


def time_floor(family: str, text: str, times: int) -> float:
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(times):
            floor_parse(family, text)
        return (time.process_time() - start) / times
    finally:
        gc.enable()


def output(unit: Callable[[int], str], units: int) -> str:
    """`units` blocks of reasoning, prose with quotes/code, and a call."""
    return "".join(unit(i) for i in range(units))


def run_once(kw: dict[str, Any], text: str, size: int, times: int = 1) -> float:
    """Seconds to feed `text` (in `size`-char chunks; 0 = one piece) and finish, per parse.

    `times` parses (fresh parsers, made before the clock starts) form one sample, so a short
    text is timed over as long a stretch as a 10x one: a sample of a few milliseconds and one
    of tens would otherwise meet interruptions (timer ticks, a VM's stolen time) in different
    proportions, which showed up as growth above 11x for code that is linear.
    """
    if size <= 0:
        return run_batch(make_plan(generation=2, **kw), text, times)
    return run_chunked({**kw, "generation": 2}, text, size, times)


def time_machine(kw: dict[str, Any], text: str, times: int) -> float:
    """`run_batch` with the whole-output batch path switched off: the runner fed once."""
    BatchPath.whole_fast = False
    try:
        return run_batch(make_plan(generation=2, **kw), text, times)
    finally:
        BatchPath.whole_fast = True


def run_batch(plan: ParsePlan, text: str, times: int = 1) -> float:
    """Seconds per whole-output parse of `text` under `plan` with `parse_text` (what
    `parsers.parse` and the sidecar's non-streamed responses run; plan built beforehand)."""
    ids = [counter_ids() for _ in range(times)]
    gc.disable()
    try:
        start = time.process_time()
        for id_factory in ids:
            parse_text(plan, text, "stop", id_factory)
        return (time.process_time() - start) / times
    finally:
        gc.enable()


def least_feed(text: str, repeat: int) -> float:
    """Seconds per 4-char chunk for the least any per-chunk API returning `list[Delta]`
    spends: one call that builds one content Delta (the way the fast paths build it) and its
    list."""
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]

    def feed(chunk: str) -> list[Delta]:
        return [content_delta(chunk)]

    best = float("inf")
    for _ in range(repeat * 4):
        gc.disable()
        try:
            start = time.process_time()
            for chunk in chunks:
                feed(chunk)
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best / len(chunks)


def measure(
    kw: dict[str, Any], cases: dict[str, tuple[str, int, int]], repeat: int
) -> dict[str, float]:
    """Best time per parse for each case (text, chunk size, parses per sample); the cases are
    interleaved round by round so that load from other processes hits them alike."""
    times = {name: float("inf") for name in cases}
    for _ in range(repeat):
        for name, (text, size, count) in cases.items():
            times[name] = min(times[name], run_once(kw, text, size, count))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller outputs, fewer repeats")
    ap.add_argument(
        "--adversarial-only", action="store_true", help="only the adversarial growth table"
    )
    ap.add_argument(
        "--family", action="append", help="adversarial table: only this family (repeatable)"
    )
    ap.add_argument("--rounds", type=int, help="adversarial table: paired rounds (default 5)")
    ap.add_argument("--no-adversarial", action="store_true", help="only the throughput table")
    args = ap.parse_args()
    # the adversarial table: 100 KB -> 400 KB, batch and 4-character streams alike
    big_input = (25_000, 25_000) if args.quick else (100_000, 100_000)
    if args.adversarial_only:
        rounds = args.rounds or (3 if args.quick else 5)
        return 0 if adversarial(big_input[0], rounds, big_input[1], args.family) else 1
    units, repeat = (8, 3) if args.quick else (30, 15)
    rounds = 3 if args.quick else 5  # paired rounds for the growth figures
    # The least a feed costs: 4-char chunks of prose with no marker, quote or blank run
    # (the streaming fast path) through the public StreamParser.feed.
    plain = "Let me think about this carefully and answer for each city in turn. " * 60
    plain_kw = {"tool_parser": "hermes", "reasoning_parser": "qwen3"}
    run_once(plain_kw, plain, 4)
    prose = measure(plain_kw, {"four": (plain, 4, 1), "batch": (plain, 0, 10)}, repeat)
    floor = prose["four"] / -(-len(plain) // 4)
    least = least_feed(plain, repeat)
    print(
        f"{'family':<12} {'chars':>7} {'batch MB/s':>10} {'4-char MB/s':>11} {'4-char':>7} "
        f"{'bound':>6} {'limit':>6} {'1-char':>7} {'us/feed':>7} {'10x batch':>9} "
        f"{'10x 4-char':>10} {'ours/floor':>10} {'rounds':>11} {'machine/floor':>13}"
    )
    linear_ok = floor_ok = True
    for name, (kw, unit) in FAMILIES.items():
        text = output(unit, units)
        long_text = output(unit, units * 10)
        run_once(kw, text, 4)  # warm-up: imports, regex compilation, caches
        calls = len(floor_parse(name, text)[2])
        assert calls == units, f"{name}: the floor found {calls} calls, not {units}"
        t = measure(
            kw,
            {
                "batch": (text, 0, 10),
                "four": (text, 4, 10),
                "one": (text, 1, 1),
            },
            repeat,
        )
        vs_floor, vs_floor_rounds, machine_vs_floor = floor_ratios(name, kw, text, repeat)
        batch, four, one = t["batch"], t["four"], t["one"]
        r4, r1 = batch / four, batch / one
        # growth paired round by round, as in the adversarial table (the machine's speed drifts)
        gkw = {**kw, "generation": 2}
        g_batch = _paired_growth(gkw, text, long_text, 0, rounds)[0]
        g_four = _paired_growth(gkw, text, long_text, 4, rounds)[0]
        linear_ok = linear_ok and g_batch <= 11 and g_four <= 11
        size = len(text.encode())
        per_feed = one / len(text) * 1e6
        # the 4-char ratio if each feed cost only the floor on top of batch's own work
        bound = batch / (batch + -(-len(text) // 4) * floor)
        limit = batch / (batch + -(-len(text) // 4) * least)
        print(
            f"{name:<12} {len(text):>7} {size / batch / 1e6:>10.2f} {size / four / 1e6:>11.2f} "
            f"{r4:>6.2f}x {bound:>5.2f}x {limit:>5.2f}x {r1:>6.2f}x {per_feed:>7.2f} "
            f"{g_batch:>8.1f}x {g_four:>9.1f}x {vs_floor:>9.2f}x "
            f"{min(vs_floor_rounds):>5.2f}-{max(vs_floor_rounds):.2f}x {machine_vs_floor:>12.2f}x"
        )
        floor_ok = floor_ok and vs_floor >= 1.0
    print(
        "4-char/1-char: throughput relative to batch (goal 4-char >= 0.5x); us/feed: cost of "
        "one 1-char feed; 10x: cost of a 10x longer output relative to 1x, median of paired "
        "rounds (goal <= 11x)"
    )
    print(
        f"bound: the 4-char ratio if every feed cost batch's work plus the least a feed "
        f"costs ({floor * 1e6:.2f} us: 4-char plain prose through StreamParser.feed); limit: "
        f"the same with only building one Delta per feed ({least * 1e6:.2f} us)"
    )
    # Why the 4-char goal depends on the text: batch skips prose with one regex search, so on
    # prose alone even `least` per feed dwarfs batch's work.
    print(
        f"prose alone ({len(plain)} chars, hermes): batch {len(plain) / prose['batch'] / 1e6:.1f} "
        f"MB/s; 4-char {prose['batch'] / prose['four']:.2f}x batch; a feed that only builds its "
        f"Delta would reach {prose['batch'] / (-(-len(plain) // 4) * least):.2f}x"
    )
    print(
        "ours/floor: batch speed relative to a whole-output regex + json.loads parse of the "
        "same text (floor time / our time, median of paired rounds: each round times ours and "
        "the machine between two floor runs; goal >= 1.0); rounds: the least and greatest "
        "round; machine/floor: the same with the whole-output batch path off (the runner fed "
        "the whole text)"
    )
    print(f"linear (10x <= 11x): {'met' if linear_ok else 'NOT MET'}")
    print(f"batch as fast as the floor (>= 1.0): {'met' if floor_ok else 'NOT MET'}")
    if args.no_adversarial:
        return 0 if linear_ok and floor_ok else 1
    adversarial_ok = adversarial(big_input[0], 3 if args.quick else 5, big_input[1])
    return 0 if linear_ok and floor_ok and adversarial_ok else 1


if __name__ == "__main__":
    sys.exit(main())
