"""The sidecar side by side with vLLM's own chat front end, on one real vLLM, in one run.

    python benchmarks/bench_engine.py [--rounds 50] [--streams 64]

One vLLM (CPU build, the tiny model of tests/engine, its engine venv; see docs/testing.md,
"A real engine") serves three front ends from the same engine, model and chat template
(tests/engine/chat_template.jinja):

- `vllm-chat`: vLLM's own `POST /v1/chat/completions` (started with the same reasoning and
  tool parsers the sidecar runs: `--reasoning-parser qwen3 --enable-auto-tool-choice
  --tool-call-parser hermes`);
- `sidecar`: the sidecar (`python -m sidecar vllm`, same template, same parsers) in front of
  vLLM's `/v1/completions`;
- `floor`: vLLM's `POST /v1/completions` called directly with the prompt the sidecar
  renders: the engine's own time, which no chat front end can go below.

1. Latency: p50 time to first token (streamed) and total time, for 8 and 64 generated
   tokens, streamed and not, the three targets interleaved request by request (the order
   rotating each round). Each front end's added time is its p50 minus the floor's; goal:
   the sidecar adds at most 0.5x what vLLM's chat front end adds.
2. Throughput: 64 concurrent streams of 64 tokens, the targets taking turns for several
   rounds; delivered completion tokens per second (from each stream's usage). Goal: the
   sidecar at least 1.0x vLLM's chat front end.

The load average is printed before and after: the machine is shared, read ratios with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from engine_harness import (  # noqa: E402 (after the path it lives on)
    MODEL_NAME,
    TEMPLATE,
    engine_venv,
    start_sidecar,
    start_vllm,
    tiny_model,
)

from sidecar.app import Sidecar  # noqa: E402
from sidecar.cli import _parser, configure  # noqa: E402

USER = [{"role": "user", "content": "Tell me about the weather in Paris today."}]
PARSERS = ("--tool-call-parser", "hermes", "--reasoning-parser", "qwen3")
TARGETS = ("floor", "vllm-chat", "sidecar")


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def rendered_prompt() -> str:
    """The prompt the sidecar sends for USER, by the sidecar's own code."""
    argv = ["--engine-url", "http://127.0.0.1:1", "--model", MODEL_NAME, *PARSERS]
    args = _parser("vllm").parse_args([*argv, "--chat-template", str(TEMPLATE)])
    config, adapter, template = configure("vllm", args, {})
    body = json.dumps({"messages": USER}).encode()
    return Sidecar(config, adapter, template).prepare(body)[2].prompt


class Targets:
    def __init__(self, vllm: str, sidecar: str, prompt: str) -> None:
        self.vllm, self.sidecar, self.prompt = vllm, sidecar, prompt

    def request(self, target: str, tokens: int, stream: bool) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {
            "model": MODEL_NAME,
            "max_tokens": tokens,
            "temperature": 0,
            "stream": stream,
        }
        if stream:
            common["stream_options"] = {"include_usage": True}
        if target == "floor":
            # What the sidecar sends the engine.
            body = {
                **common,
                "prompt": self.prompt,
                "add_special_tokens": False,
                "skip_special_tokens": False,
            }
            return f"{self.vllm}/v1/completions", body
        base = self.vllm if target == "vllm-chat" else self.sidecar
        return f"{base}/v1/chat/completions", {**common, "messages": USER}


def _text_of(event: dict[str, Any]) -> str:
    out = ""
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        out += choice.get("text") or delta.get("content") or delta.get("reasoning_content") or ""
    return out


async def one(
    client: httpx.AsyncClient, url: str, body: dict[str, Any]
) -> tuple[float, float, int]:
    """(time to first token, total time, completion tokens) of one request."""
    started = time.perf_counter()
    first = None
    tokens = 0
    if not body["stream"]:
        response = await client.post(url, json=body)
        response.raise_for_status()
        total = time.perf_counter() - started
        return total, total, int(response.json()["usage"]["completion_tokens"])
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if first is None and _text_of(event):
                first = time.perf_counter() - started
            if event.get("usage"):
                tokens = int(event["usage"]["completion_tokens"])
    total = time.perf_counter() - started
    return (first if first is not None else total), total, tokens


def p50(values: list[float]) -> float:
    return statistics.median(values)


async def latency(targets: Targets, rounds: int) -> dict[tuple[str, int, bool], list[Any]]:
    results: dict[tuple[str, int, bool], list[Any]] = {}
    configs = [(tokens, stream) for tokens in (8, 64) for stream in (True, False)]
    async with httpx.AsyncClient(timeout=120) as client:
        for r in range(rounds + 3):  # 3 warm-up rounds, not counted
            for tokens, stream in configs:
                order = TARGETS[r % 3 :] + TARGETS[: r % 3]
                for target in order:
                    url, body = targets.request(target, tokens, stream)
                    measured = await one(client, url, body)
                    if r >= 3:
                        results.setdefault((target, tokens, stream), []).append(measured)
    return results


async def throughput(targets: Targets, streams: int, rounds: int) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {t: [] for t in TARGETS}
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    for r in range(rounds + 1):  # one warm-up round
        order = TARGETS[r % 3 :] + TARGETS[: r % 3]
        for target in order:
            url, body = targets.request(target, 64, True)
            # New connections each turn: kept-alive ones idle through the other targets'
            # turns, past the servers' keep-alive (5 s), and may be closed as they are reused.
            async with httpx.AsyncClient(timeout=300, limits=limits) as client:
                started = time.perf_counter()
                done = await asyncio.gather(*(one(client, url, body) for _ in range(streams)))
                wall = time.perf_counter() - started
            if r > 0:
                rates[target].append(sum(tokens for _, _, tokens in done) / wall)
    return rates


def report(lat: dict[tuple[str, int, bool], list[Any]], rates: dict[str, list[float]]) -> None:
    print("\n1. latency, p50 in ms (TTFT: first token streamed; total: last byte)")
    print(
        f"{'tokens':>6} {'stream':>6} {'what':>5}  "
        + "  ".join(f"{t:>9}" for t in TARGETS)
        + "   sidecar/vllm   added: sidecar/vllm-chat (goal <= 0.5)"
    )
    for tokens in (8, 64):
        for stream in (True, False):
            kinds: list[tuple[str, Callable[[Any], float]]] = [("total", lambda m: m[1])]
            if stream:
                kinds.insert(0, ("TTFT", lambda m: m[0]))
            for name, pick in kinds:
                values = {t: p50([pick(m) for m in lat[(t, tokens, stream)]]) for t in TARGETS}
                floor = values["floor"]
                added_sidecar = values["sidecar"] - floor
                added_vllm = values["vllm-chat"] - floor
                ratio = values["sidecar"] / values["vllm-chat"]
                added = added_sidecar / added_vllm if added_vllm > 0 else float("nan")
                cells = "  ".join(f"{values[t] * 1000:9.2f}" for t in TARGETS)
                print(
                    f"{tokens:>6} {'yes' if stream else 'no':>6} {name:>5}  {cells}"
                    f"   {ratio:10.3f}x   {added:6.2f}x "
                    f"({added_sidecar * 1000:.2f} vs {added_vllm * 1000:.2f} ms)"
                )
    tokens_seen = {t: {m[2] for k, v in lat.items() if k[0] == t for m in v} for t in TARGETS}
    print(f"   completion tokens seen per target: {tokens_seen}")
    print("\n2. 64 concurrent streams of 64 tokens: delivered tokens/s (median of rounds)")
    medians = {t: p50(rates[t]) for t in TARGETS}
    for t in TARGETS:
        runs = ", ".join(f"{r:.0f}" for r in rates[t])
        print(f"   {t:>9}: {medians[t]:8.0f} tokens/s  ({runs})")
    ratio = medians["sidecar"] / medians["vllm-chat"]
    print(f"   sidecar / vllm-chat: {ratio:.3f}x (goal >= 1.0)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="latency rounds (default 50)")
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams")
    parser.add_argument("--throughput-rounds", type=int, default=5)
    args = parser.parse_args()
    print(loadavg())
    python = engine_venv()
    model = tiny_model(python)
    logs = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    extra = ("--enable-auto-tool-choice", *PARSERS, "--disable-uvicorn-access-log")
    vllm, vllm_url = start_vllm(python, model, logs, extra)
    try:
        sidecar, sidecar_url = start_sidecar(
            vllm_url, None, logs, "sidecar", ("--chat-template", str(TEMPLATE))
        )
        try:
            targets = Targets(vllm_url, sidecar_url, rendered_prompt())
            print(f"{loadavg()} (engine and sidecar up)")
            lat = asyncio.run(latency(targets, args.rounds))
            rates = asyncio.run(throughput(targets, args.streams, args.throughput_rounds))
            report(lat, rates)
            print(f"\n{loadavg()} (end)")
        finally:
            sidecar.stop()
    finally:
        vllm.stop()


if __name__ == "__main__":
    main()
