"""The sidecar side by side with vLLM's own chat front end, on one real vLLM, in one run.

    python benchmarks/bench_engine.py [--rounds 50] [--streams 64]

One vLLM (CPU build, the tiny model of tests/sidecar/engine, its engine venv; see docs/testing.md,
"A real engine") serves three front ends from the same engine, model and chat template
(tests/sidecar/engine/chat_template.jinja):

- `vllm-chat`: vLLM's own `POST /v1/chat/completions` (started with the same reasoning and
  tool parsers the sidecar runs: `--reasoning-parser qwen3 --enable-auto-tool-choice
  --tool-call-parser hermes`);
- `sidecar`: the sidecar (`python -m sidecar vllm`, same template, same parsers) in front of
  vLLM's `/v1/completions`;
- `floor`: vLLM's `POST /v1/completions` called directly with the prompt the sidecar
  renders: the engine's own time, which no chat front end can go below;
- `relay`: the floor's request through a bare TCP relay (`tcp_relay.py`, bytes copied both
  ways, no parsing): what one more process on loopback adds by itself, which any front end
  in its own process (the sidecar's place) pays before doing any work.

1. Latency: p50 time to first token (streamed) and total time, for 8 and 64 generated
   tokens, streamed and not, the three targets interleaved request by request (the order
   rotating each round). Each front end's added time is its p50 minus the floor's; goal:
   the sidecar adds at most 0.5x what vLLM's chat front end adds.
2. Throughput: 64 concurrent streams of 64 tokens, the targets taking turns for several
   rounds; delivered completion tokens per second (from each stream's usage). Goal: the
   sidecar at least 1.0x vLLM's chat front end.

3. CPU per request: the same requests one at a time, the CPU time each process spent per
   request (from /proc): vLLM's API server for the floor and for its chat front end (the
   difference is the chat front end's own work), the sidecar's process, the relay's. Unlike
   the latencies, these barely move with the machine's load.

The load average is printed before and after: the machine is shared, read ratios with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sidecar" / "engine"))

from engine_harness import (  # noqa: E402 (after the path it lives on)
    MODEL_NAME,
    TEMPLATE,
    engine_venv,
    free_port,
    start_sidecar,
    start_vllm,
    tiny_model,
)

from sidecar.app import Sidecar  # noqa: E402
from sidecar.cli import _parser, configure  # noqa: E402

USER = [{"role": "user", "content": "Tell me about the weather in Paris today."}]
PARSERS = ("--tool-call-parser", "hermes", "--reasoning-parser", "qwen3")
TARGETS = ("floor", "vllm-chat", "sidecar", "relay")  # and "against" with --against


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
    def __init__(
        self, vllm: str, sidecar: str, relay: str, prompt: str, against: str | None = None
    ) -> None:
        self.vllm, self.sidecar, self.relay, self.prompt = vllm, sidecar, relay, prompt
        self.against = against
        self.names = (*TARGETS, "against") if against else TARGETS

    def turn(self, r: int) -> tuple[str, ...]:
        """The targets in round `r`'s order (rotating, so none is always first)."""
        k = r % len(self.names)
        return self.names[k:] + self.names[:k]

    def request(self, target: str, tokens: int, stream: bool) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {
            "model": MODEL_NAME,
            "max_tokens": tokens,
            "temperature": 0,
            "stream": stream,
        }
        if stream:
            common["stream_options"] = {"include_usage": True}
        if target in ("floor", "relay"):
            # What the sidecar sends the engine.
            body = {
                **common,
                "prompt": self.prompt,
                "add_special_tokens": False,
                "skip_special_tokens": False,
            }
            return f"{self.vllm if target == 'floor' else self.relay}/v1/completions", body
        base = {"vllm-chat": self.vllm, "sidecar": self.sidecar}.get(target, self.against)
        return f"{base}/v1/chat/completions", {**common, "messages": USER}


def start_relay(upstream: str, logs: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`tcp_relay.py` on a free port in front of `upstream`, once it accepts connections."""
    host, port = httpx.URL(upstream).host, httpx.URL(upstream).port
    listen = free_port()
    script = Path(__file__).with_name("tcp_relay.py")
    with (logs / "relay.log").open("wb") as log:
        relay = subprocess.Popen(
            [sys.executable, str(script), str(listen), host, str(port)], stderr=log
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return relay, f"http://127.0.0.1:{listen}"
        except OSError:
            if relay.poll() is not None or time.monotonic() > deadline:
                relay.kill()
                raise RuntimeError(f"the relay did not start (see {logs / 'relay.log'})") from None
            time.sleep(0.05)


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
                for target in targets.turn(r):
                    url, body = targets.request(target, tokens, stream)
                    measured = await one(client, url, body)
                    if r >= 3:
                        results.setdefault((target, tokens, stream), []).append(measured)
    return results


async def throughput(targets: Targets, streams: int, rounds: int) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {t: [] for t in targets.names}
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    for r in range(rounds + 1):  # one warm-up round
        for target in targets.turn(r):
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


def report(
    names: tuple[str, ...],
    lat: dict[tuple[str, int, bool], list[Any]],
    rates: dict[str, list[float]],
) -> None:
    print("\n1. latency, p50 in ms (TTFT: first token streamed; total: last byte)")
    print(
        f"{'tokens':>6} {'stream':>6} {'what':>5}  "
        + "  ".join(f"{t:>9}" for t in names)
        + "   sidecar/vllm   added: sidecar/vllm-chat (goal <= 0.5)   relay/vllm-chat"
    )
    for tokens in (8, 64):
        for stream in (True, False):
            kinds: list[tuple[str, Callable[[Any], float]]] = [("total", lambda m: m[1])]
            if stream:
                kinds.insert(0, ("TTFT", lambda m: m[0]))
            for name, pick in kinds:
                values = {t: p50([pick(m) for m in lat[(t, tokens, stream)]]) for t in names}
                floor = values["floor"]
                added_sidecar = values["sidecar"] - floor
                added_vllm = values["vllm-chat"] - floor
                ratio = values["sidecar"] / values["vllm-chat"]
                added_relay = values["relay"] - floor
                added = added_sidecar / added_vllm if added_vllm > 0 else float("nan")
                hop = added_relay / added_vllm if added_vllm > 0 else float("nan")
                cells = "  ".join(f"{values[t] * 1000:9.2f}" for t in names)
                print(
                    f"{tokens:>6} {'yes' if stream else 'no':>6} {name:>5}  {cells}"
                    f"   {ratio:10.3f}x   {added:6.2f}x "
                    f"({added_sidecar * 1000:.2f} vs {added_vllm * 1000:.2f} ms)"
                    f"   {hop:6.2f}x ({added_relay * 1000:.2f} ms)"
                    + (
                        f"   against: added {(values['against'] - floor) * 1000:.2f} ms"
                        if "against" in values
                        else ""
                    )
                )
    tokens_seen = {t: {m[2] for k, v in lat.items() if k[0] == t for m in v} for t in names}
    print(f"   completion tokens seen per target: {tokens_seen}")
    print("\n2. 64 concurrent streams of 64 tokens: delivered tokens/s (median of rounds)")
    medians = {t: p50(rates[t]) for t in names}
    for t in names:
        runs = ", ".join(f"{r:.0f}" for r in rates[t])
        print(f"   {t:>9}: {medians[t]:8.0f} tokens/s  ({runs})")
    ratio = medians["sidecar"] / medians["vllm-chat"]
    print(f"   sidecar / vllm-chat: {ratio:.3f}x (goal >= 1.0)")
    if "against" in medians:
        print(f"   sidecar / against: {medians['sidecar'] / medians['against']:.3f}x")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_per_request(
    targets: Targets, pids: dict[str, int], requests: int
) -> dict[tuple[str, int, bool], dict[str, float]]:
    """CPU seconds per request of each process, per target and request shape."""
    out: dict[tuple[str, int, bool], dict[str, float]] = {}
    async with httpx.AsyncClient(timeout=120) as client:
        for tokens, stream in ((8, False), (64, True)):
            for target in targets.names:
                url, body = targets.request(target, tokens, stream)
                for _ in range(5):  # warm-up
                    await one(client, url, body)
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                for _ in range(requests):
                    await one(client, url, body)
                out[(target, tokens, stream)] = {
                    name: (cpu_seconds(pid) - before[name]) / requests for name, pid in pids.items()
                }
    return out


def report_cpu(
    names: tuple[str, ...], cpu: dict[tuple[str, int, bool], dict[str, float]], requests: int
) -> None:
    print(f"\n3. CPU per request in ms ({requests} requests one at a time per row)")
    print(f"{'tokens':>6} {'stream':>6}  {'front end':>24}  {'own CPU':>8}  vs vllm-chat's own")
    for tokens, stream in ((8, False), (64, True)):
        api = {t: cpu[(t, tokens, stream)]["vllm-api"] for t in names}
        chat_own = api["vllm-chat"] - api["floor"]
        rows = [
            ("vllm-chat (api - floor)", chat_own),
            ("sidecar (its process)", cpu[("sidecar", tokens, stream)]["sidecar"]),
            ("relay (its process)", cpu[("relay", tokens, stream)]["relay"]),
        ]
        if "against" in names:
            rows.append(("against (its process)", cpu[("against", tokens, stream)]["against"]))
        for name, own in rows:
            ratio = own / chat_own if chat_own > 0 else float("nan")
            print(
                f"{tokens:>6} {'yes' if stream else 'no':>6}  {name:>24}  "
                f"{own * 1000:8.2f}  {ratio:6.2f}x"
            )
        print(
            f"{'':>15}vllm api per floor request {api['floor'] * 1000:.2f} ms, "
            f"per chat request {api['vllm-chat'] * 1000:.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="latency rounds (default 50)")
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams")
    parser.add_argument("--throughput-rounds", type=int, default=5)
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="also run the sidecar from another checkout (target `against`), in the same rounds",
    )
    parser.add_argument(
        "--cpu-requests", type=int, default=200, help="requests per CPU row (default 200)"
    )
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
        relay, relay_url = start_relay(vllm_url, logs)
        other = None
        if args.against:
            other, other_url = start_sidecar(
                vllm_url,
                None,
                logs,
                "against",
                ("--chat-template", str(TEMPLATE)),
                pythonpath=args.against.resolve(),
            )
        try:
            against = other_url if other else None
            targets = Targets(vllm_url, sidecar_url, relay_url, rendered_prompt(), against)
            print(f"{loadavg()} (engine and sidecar up)")
            lat = asyncio.run(latency(targets, args.rounds))
            rates = asyncio.run(throughput(targets, args.streams, args.throughput_rounds))
            report(targets.names, lat, rates)
            pids = {"vllm-api": vllm.proc.pid, "sidecar": sidecar.proc.pid, "relay": relay.pid}
            if other:
                pids["against"] = other.proc.pid
            cpu = asyncio.run(cpu_per_request(targets, pids, args.cpu_requests))
            report_cpu(targets.names, cpu, args.cpu_requests)
            print(f"\n{loadavg()} (end)")
        finally:
            if other:
                other.stop()
            relay.terminate()
            relay.wait()
            sidecar.stop()
    finally:
        vllm.stop()


if __name__ == "__main__":
    main()
