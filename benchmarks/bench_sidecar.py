"""Sidecar overhead, side by side with calling the (fake) engine directly, in one run.

    python benchmarks/bench_sidecar.py [--requests 1000] [--engine vllm] [--latency-only]

Starts a fake engine (`python -m sidecar.fake_engine`) and the real sidecar CLI as separate
processes on loopback, then measures from this process:
  1. latency of sequential non-streamed requests: engine direct, the sidecar and
     `raw_proxy.py --work` (bare asyncio doing the sidecar's own work with its own functions:
     the least a Python sidecar doing this work adds, whatever its HTTP server and plumbing)
     interleaved request by request in the same rounds; the sidecar's added p50 over that
     floor's (goal <= 1.15x), also per block of 100 rounds (the machine's speed drifts
     within a run). The floor parses HTTP with httptools, makes a unique response
     id and reads into one reused buffer, as the sidecar does: before, it only located a
     Content-Length body and answered "chatcmpl-0", which was not the same work. With
     `--against DIR`, a change toggled alone: the same sidecar run from this tree and from
     the source tree DIR (a checkout of another commit) in the same rounds. Then the bare
     `raw_proxy.py` floor;
  2. throughput with 64 concurrent streams: direct vs sidecar (requests/s, chunks/s);
  3. 200 concurrent streams: errors (goal: none) and the sidecar's RSS before/after;
  4. reading one long SSE line from the engine at 5 MB and 20 MB (goal: 4x the bytes in at
     most 5x the time, i.e. linear).
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
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from raw_proxy import bench_sidecar
from steal import Steal

from sidecar.engines import ENGINES

OUTPUT = (
    "<think>The user wants the weather, so I will call the tool.</think>Let me check that "
    'for you.<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris", '
    '"unit": "celsius"}}\n</tool_call>'
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"process exited early: {proc.args!r}")
        if ready():
            return
        time.sleep(0.1)
    raise SystemExit(f"{what} did not come up")


def wait_live(url: str, proc: subprocess.Popen[bytes]) -> None:
    def ready() -> bool:
        try:
            return httpx.get(url, timeout=1).status_code < 500
        except httpx.TransportError:
            return False

    _wait(ready, proc, url)


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    def ready() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    _wait(ready, proc, f"port {port}")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_split_ms(pid: int) -> tuple[float, float]:
    """User and system CPU milliseconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * tick, int(fields[12]) * tick


def cpu_ms(pid: int) -> float:
    """User + system CPU milliseconds the process has used so far."""
    return sum(cpu_split_ms(pid))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Target:
    def __init__(self, name: str, url: str, body: Callable[[bool], dict[str, object]]):
        self.name, self.url, self.body = name, url, body


async def one(client: httpx.AsyncClient, target: Target, stream: bool) -> int:
    """One request; returns the number of SSE events (or 1 for a whole response)."""
    if not stream:
        response = await client.post(target.url, json=target.body(False))
        response.raise_for_status()
        return 1
    events = 0
    async with client.stream("POST", target.url, json=target.body(True)) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                if '"error"' in line[:20]:
                    raise RuntimeError(line)
                events += 1
    return events


async def latency(targets: list[Target], n: int, get: bool = False) -> list[list[float]]:
    """Milliseconds per sequential request to each target, interleaved round by round (the
    order alternating each round) so machine load drifts hit every target alike; one client
    (own keep-alive connection) per target, the same warm-up for each."""
    clients = [httpx.AsyncClient(timeout=30) for _ in targets]
    try:

        async def call(i: int) -> None:
            if get:
                (await clients[i].get(targets[i].url)).raise_for_status()
            else:
                await one(clients[i], targets[i], False)

        for _ in range(20):  # warm-up
            for i in range(len(targets)):
                await call(i)
        times: list[list[float]] = [[] for _ in targets]
        order = list(range(len(targets)))
        for _ in range(n):
            order.reverse()
            for i in order:
                t0 = time.perf_counter()
                await call(i)
                times[i].append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        for client in clients:
            await client.aclose()


BLOCK = 100  # rounds per block in `block_ratios`


def block_ratios(direct: list[float], via: list[float], floor: list[float]) -> list[float]:
    """The added-p50 ratio (via over floor, each above direct) of each block of `BLOCK`
    consecutive rounds: rounds close in time ran at the same machine speed."""
    out = []
    for start in range(0, len(direct) - BLOCK + 1, BLOCK):
        part = slice(start, start + BLOCK)
        base = pct(direct[part], 50)
        floor_added = pct(floor[part], 50) - base
        if floor_added > 0:
            out.append((pct(via[part], 50) - base) / floor_added)
    return out


def in_process_cost(body: dict[str, object], n: int) -> float:
    """Milliseconds of sidecar CPU per request without any I/O: prepare + parse the output."""
    from sidecar.parsing import parse_whole

    sidecar = bench_sidecar()
    raw = json.dumps(body).encode()
    t0 = time.perf_counter()
    for _ in range(n):
        _, plan, _ = sidecar.prepare(raw)
        parse_whole(plan, OUTPUT, "stop")
    return (time.perf_counter() - t0) * 1000 / n


async def concurrent(
    target: Target, streams: int, total: int, on_peak: Callable[[], None] | None = None
) -> tuple[float, int, int]:
    """`total` streamed requests over `streams` concurrent workers: (seconds, events, errors)."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=streams)
    events = errors = 0
    remaining = total

    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            nonlocal events, errors, remaining
            while remaining > 0:
                remaining -= 1
                try:
                    got = await one(client, target, True)
                except Exception as exc:
                    errors += 1
                    if errors == 1:
                        print(f"   first error: {exc!r}", file=sys.stderr)
                else:
                    events += got

        t0 = time.perf_counter()
        tasks = [asyncio.create_task(worker()) for _ in range(streams)]
        if on_peak is not None:
            await asyncio.sleep(0.2)
            on_peak()
        await asyncio.gather(*tasks)
        return time.perf_counter() - t0, events, errors


def json_loads_seconds(size: int) -> float:
    """CPU seconds of `json.loads` alone on the same event: the peer of the line timing."""
    event = json.dumps({"choices": [{"index": 0, "text": "x" * size, "finish_reason": "stop"}]})
    t0 = time.process_time()
    json.loads(event)
    return time.process_time() - t0


def sse_line_seconds(size: int) -> float:
    """Seconds `EngineStream` takes to read one SSE event of `size` bytes of text arriving in
    64 KiB network reads (the sidecar's engine-side reading, without sockets)."""
    from sidecar.engine_client import EngineStream
    from sidecar.engines.vllm import VLLMAdapter

    event = json.dumps({"choices": [{"index": 0, "text": "x" * size, "finish_reason": "stop"}]})
    wire = b"data: " + event.encode() + b"\n\ndata: [DONE]\n\n"
    pieces = [wire[i : i + 65536] for i in range(0, len(wire), 65536)]

    class Body:
        async def aiter_bytes(self):  # type: ignore[no-untyped-def]
            for piece in pieces:
                yield piece

        async def aclose(self) -> None:
            pass

    async def read() -> int:
        stream = EngineStream(Body(), VLLMAdapter(), 10)
        return sum(len(e.text) for batch in [b async for b in stream.batches()] for e in batch)

    t0 = time.process_time()  # CPU time: other processes taking the core do not count
    assert run(read()) == size
    return time.process_time() - t0


def fresh_process(function: str, size: int) -> float:
    """`function(size)` of this module in a new process: each line is read by a process that
    has read none before. In one process the allocator keeps the memory of earlier lines below
    its mmap threshold (~32 MB) and hands out larger ones fresh, page-faulting on first
    touch, so a 5 MB line was timed warm and a 20 MB line cold."""
    code = f"import bench_sidecar as b; print(b.{function}({size}))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=Path(__file__).parent,
    )  # fmt: skip
    return float(out.stdout)


def sse_line_ratio(small_size: int, function: str = "sse_line_seconds") -> tuple[float, float]:
    """(seconds for `small_size` bytes, seconds for 4x that), medians of 5 each, measured
    alternately, each in a fresh process (`fresh_process`)."""
    small, large = [], []
    for _ in range(5):
        small.append(fresh_process(function, small_size))
        large.append(fresh_process(function, 4 * small_size))
    return statistics.median(small), statistics.median(large)


def run(coro: Awaitable[object]) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--engine", choices=tuple(ENGINES), default="vllm")
    p.add_argument(
        "--requests", type=int, default=1000, help="sequential latency samples per target"
    )
    p.add_argument("--stream-requests", type=int, default=640, help="requests at 64 streams")
    p.add_argument(
        "--latency-only",
        action="store_true",
        help="section 1 only (headline and the `--against` toggle): shorter runs while iterating",
    )
    p.add_argument(
        "--against",
        metavar="DIR",
        type=Path,
        help="also run the sidecar from the source tree DIR (another commit's checkout) in "
        "the same rounds as this tree's: the change between them toggled alone",
    )
    args = p.parse_args()

    engine_port, sidecar_port = free_port(), free_port()
    floor_ports = free_port(), free_port()  # raw proxy, raw proxy --work
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"bench": {"text": OUTPUT, "seed": 1}}, f)
    engine = subprocess.Popen(
        [sys.executable, "-m", "sidecar.fake_engine", args.engine, "--port", str(engine_port),
         "--text", OUTPUT],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip

    def start_sidecar(port: int, source: Path | None = None) -> subprocess.Popen[bytes]:
        """The real sidecar CLI (`python -m sidecar`), from `source` if given."""
        argv = [
            args.engine,
            "--engine-url",
            f"http://127.0.0.1:{engine_port}",
            "--model",
            "bench",
            "--tool-call-parser",
            "hermes",
            "--reasoning-parser",
            "qwen3",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        command = [sys.executable, "-m", "sidecar", *argv]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DYN_")}
        if source is not None:
            env["PYTHONPATH"] = str(source.resolve())
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)

    # The sidecar from this tree, and from `--against`'s.
    sidecar = start_sidecar(sidecar_port)
    other_port = free_port()
    other = start_sidecar(other_port, args.against) if args.against else None
    path = "/generate" if args.engine == "sglang" else "/v1/completions"
    prompt = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"

    def engine_body(stream: bool) -> dict[str, object]:
        if args.engine == "sglang":
            return {"text": prompt, "sampling_params": {}, "stream": stream}
        return {"model": "bench", "prompt": prompt, "stream": stream}

    floors: list[subprocess.Popen[bytes]] = []
    try:
        wait_live(f"http://127.0.0.1:{engine_port}/health", engine)
        for port, extra in zip(floor_ports, ([], ["--work"]), strict=True):
            floors.append(subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("raw_proxy.py")), str(engine_port),
                 str(port), path, json.dumps(engine_body(False)), *extra],
                stdout=subprocess.DEVNULL,
            ))  # fmt: skip
        wait_live(f"http://127.0.0.1:{sidecar_port}/live", sidecar)
        if other is not None:
            wait_live(f"http://127.0.0.1:{other_port}/live", other)
        for port, proc in zip(floor_ports, floors, strict=True):
            wait_port(port, proc)

        def chat_body(stream: bool) -> dict[str, object]:
            return {
                "model": "bench",
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": TOOLS,
                "stream": stream,
            }

        direct = Target("engine direct", f"http://127.0.0.1:{engine_port}{path}", engine_body)
        via = Target(
            "via sidecar", f"http://127.0.0.1:{sidecar_port}/v1/chat/completions", chat_body
        )
        bare, worked = (
            Target(name, f"http://127.0.0.1:{port}/v1/chat/completions", chat_body)
            for name, port in zip(("raw proxy", "raw + work"), floor_ports, strict=True)
        )
        print(f"engine: fake {args.engine}; parser route: legacy_jail (hermes + qwen3)")
        print(
            f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
            "(other processes competing for the cores inflate every figure below)"
        )

        print(
            f"\n1. sequential non-streamed latency, {args.requests} requests each, engine "
            "direct, sidecar and raw proxy + work interleaved in the same rounds (ms)"
        )
        steal = Steal()
        cpu_before = cpu_ms(sidecar.pid), cpu_ms(engine.pid), cpu_ms(floors[1].pid)
        split_before = cpu_split_ms(sidecar.pid)
        lat = run(latency([direct, via, worked], args.requests))
        rounds = args.requests + 20
        sidecar_cpu = (cpu_ms(sidecar.pid) - cpu_before[0]) / rounds
        engine_cpu = (cpu_ms(engine.pid) - cpu_before[1]) / (3 * rounds)
        worked_cpu = (cpu_ms(floors[1].pid) - cpu_before[2]) / rounds
        user, system = (
            (after - before) / rounds
            for after, before in zip(cpu_split_ms(sidecar.pid), split_before, strict=True)
        )
        assert isinstance(lat, list)
        d, s, w = lat
        print(f"   {'':24}{'p50':>8}{'p99':>8}{'mean':>8}")
        for name, values in ((direct.name, d), (via.name, s), (worked.name, w)):
            print(
                f"   {name:24}{pct(values, 50):8.2f}{pct(values, 99):8.2f}"
                f"{statistics.fmean(values):8.2f}"
            )
        added_sidecar = pct(s, 50) - pct(d, 50)
        added_floor = pct(w, 50) - pct(d, 50)
        ratio = added_sidecar / added_floor
        print(
            f"   added p50: sidecar {added_sidecar:.2f} ms, raw proxy doing the same work "
            f"{added_floor:.2f} ms: {ratio:.2f}x the floor (goal <= 1.15x)"
        )
        blocks = block_ratios(d, s, w)
        if blocks:
            print(
                f"   the same ratio per block of {BLOCK} rounds (this machine's speed drifts "
                f"within a run): median {statistics.median(blocks):.2f}x, "
                f"blocks {min(blocks):.2f}-{max(blocks):.2f}x"
            )
        print(
            f"   CPU per request (user + system): sidecar {sidecar_cpu:.2f} ms "
            f"({user:.2f} + {system:.2f}), raw proxy + work {worked_cpu:.2f} ms, "
            f"fake engine {engine_cpu:.2f} ms"
        )
        own = in_process_cost(chat_body(False), args.requests)
        print(
            f"   the sidecar's own work (validate, render, plan, parse) in a hot loop: {own:.3f} ms"
        )

        if other is not None:
            print(
                f"\n   a change toggled alone: {args.requests} rounds of direct, the sidecar "
                f"from this tree and from {args.against}"
            )
            other_target = Target(
                "against", f"http://127.0.0.1:{other_port}/v1/chat/completions", chat_body
            )
            pair_before = cpu_ms(sidecar.pid), cpu_ms(other.pid)
            lat = run(latency([direct, via, other_target], args.requests))
            assert isinstance(lat, list)
            this_cpu, other_cpu = (
                (cpu_ms(proc.pid) - before) / rounds
                for proc, before in zip((sidecar, other), pair_before, strict=True)
            )
            d3, this_values, other_values = lat
            added_this = pct(this_values, 50) - pct(d3, 50)
            added_other = pct(other_values, 50) - pct(d3, 50)
            print(
                f"   added p50: this tree {added_this:.2f} ms, against {added_other:.2f} ms: "
                f"{added_this / added_other:.2f}x\n"
                f"   CPU per request: this tree {this_cpu:.2f} ms, against {other_cpu:.2f} ms"
            )

        if args.latency_only:
            return 0
        print(f"\n   the bare floor, in {args.requests} rounds of its own with direct")
        before = cpu_ms(floors[0].pid)
        lat = run(latency([direct, bare], args.requests))
        assert isinstance(lat, list)
        bare_added = pct(lat[1], 50) - pct(lat[0], 50)
        cpu = (cpu_ms(floors[0].pid) - before) / rounds
        print(
            f"   raw proxy (bare asyncio, no framework, no work) added p50 {bare_added:.2f} ms, "
            f"CPU {cpu:.2f} ms/request"
        )

        health = [
            Target(name, url, lambda _: {})
            for name, url in (
                ("engine /health", f"http://127.0.0.1:{engine_port}/health"),
                ("sidecar /health", f"http://127.0.0.1:{sidecar_port}/health"),
            )
        ]
        hop = run(latency(health, args.requests, get=True))
        assert isinstance(hop, list)
        e, h = hop
        print(
            f"   of which one proxied HTTP hop (sidecar /health -> engine /health): "
            f"p50 {pct(h, 50) - pct(e, 50):.2f} ms"
        )

        print(f"   {steal.describe()}")
        print(f"\n2. throughput, 64 concurrent streams, {args.stream_requests} requests")
        rates = {}
        for target in (direct, via):
            result = run(concurrent(target, 64, args.stream_requests))
            assert isinstance(result, tuple)
            seconds, events, errors = result
            rates[target.name] = args.stream_requests / seconds
            print(
                f"   {target.name:16}{args.stream_requests / seconds:8.1f} req/s"
                f"{events / seconds:10.0f} events/s ({events / args.stream_requests:.0f}/request)"
                f"   errors {errors}"
            )
        print(f"   sidecar / direct: {rates[via.name] / rates[direct.name]:.2f}x")
        print(
            "   (the load generator parses every SSE event: the sidecar relays the engine's\n"
            "    events per network read and the V1 jail sends a call whole, so it sends fewer)"
        )

        print("\n3. 200 concurrent streams through the sidecar")
        before = rss_kib(sidecar.pid)
        peak = [before]

        def sample() -> None:
            peak.append(rss_kib(sidecar.pid))

        result = run(concurrent(via, 200, 200, on_peak=sample))
        assert isinstance(result, tuple)
        seconds, events, errors = result
        result = run(concurrent(via, 200, 600))
        assert isinstance(result, tuple)
        errors += result[2]
        after = rss_kib(sidecar.pid)
        print(f"   800 requests in waves of 200: errors {errors} (goal 0)")
        print(
            f"   sidecar RSS: before {before / 1024:.1f} MiB, during {max(peak) / 1024:.1f} MiB, "
            f"after {after / 1024:.1f} MiB"
        )

        print(
            "\n4. one long SSE line from the engine (EngineStream, 64 KiB reads, CPU time, "
            "each in a fresh process)"
        )
        small, large = sse_line_ratio(5_000_000)
        sse_ratio = large / small
        peer_small, peer_large = sse_line_ratio(5_000_000, "json_loads_seconds")
        print(
            f"   5 MB line {small * 1000:.0f} ms, 20 MB line {large * 1000:.0f} ms: 4x the bytes "
            f"take {sse_ratio:.2f}x the time (goal <= 5x: linear)\n"
            f"   peer, json.loads alone of the same events: {peer_small * 1000:.0f} ms, "
            f"{peer_large * 1000:.0f} ms, {peer_large / peer_small:.2f}x"
        )
        return 1 if errors else 0
    finally:
        for proc in (sidecar, *([other] if other else []), engine, *floors):
            proc.terminate()
            proc.wait(10)
        os.unlink(f.name)


if __name__ == "__main__":
    sys.exit(main())
