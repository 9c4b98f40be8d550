"""Prometheus metrics of one sidecar (its own registry, so several apps can share a process).

Besides the sidecar's own series, the registry carries prometheus_client's process, platform
and GC collectors (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
`process_open_fds`, `python_info`, `python_gc_*`), as vLLM's `/metrics` does.
"""

from __future__ import annotations

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, engine: str) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sidecar_requests",
            "Chat completion requests by final HTTP status",
            ["engine", "status"],
            registry=self.registry,
        )
        self.errors = Counter(
            "sidecar_request_errors",
            "Failed chat completion requests by HTTP status and error code",
            ["engine", "status", "code"],
            registry=self.registry,
        )
        self.routes = Counter(
            "sidecar_parser_route_requests",
            "Chat completion requests by the parser route that served them",
            ["engine", "route"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sidecar_request_duration_seconds",
            "Chat completion latency, request received to last byte",
            ["engine", "stream"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.ttft = Histogram(
            "sidecar_time_to_first_token_seconds",
            "Streamed chat completions: request received to first generated delta sent",
            ["engine"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        # A plain count the gauge reads when scraped: kept per request without the lock a
        # gauge's inc()/dec() take (one event loop thread changes it).
        self.in_flight = 0
        Gauge(
            "sidecar_requests_in_flight",
            "Chat completion requests being served (received, response not finished)",
            ["engine"],
            registry=self.registry,
        ).labels(engine).set_function(lambda: self.in_flight)
        self.prompt_tokens = Counter(
            "sidecar_prompt_tokens",
            "Prompt tokens of served chat completions, as the engine counted them",
            ["engine"],
            registry=self.registry,
        ).labels(engine)
        self.generation_tokens = Counter(
            "sidecar_generation_tokens",
            "Generated tokens of served chat completions, as the engine counted them",
            ["engine"],
            registry=self.registry,
        ).labels(engine)
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(collector)
        self.engine = engine

        # Label children looked up once per label set (`labels()` costs ~10 us per request).
        self._routes: dict[str, Counter] = {}
        self._requests: dict[int, Counter] = {}
        self._latency = {
            stream: self.latency.labels(engine, "true" if stream else "false")
            for stream in (False, True)
        }

    def route(self, route: str) -> None:
        child = self._routes.get(route)
        if child is None:
            child = self._routes[route] = self.routes.labels(self.engine, route)
        child.inc()

    def done(self, status: int, seconds: float, stream: bool, code: str | None = None) -> None:
        child = self._requests.get(status)
        if child is None:
            child = self._requests[status] = self.requests.labels(self.engine, str(status))
        child.inc()
        if status >= 400:
            self.errors.labels(self.engine, str(status), code or "unknown").inc()
        self._latency[stream].observe(seconds)

    def tokens(self, prompt: int, generated: int) -> None:
        self.prompt_tokens.inc(prompt)
        self.generation_tokens.inc(generated)

    def first_token(self, seconds: float) -> None:
        self.ttft.labels(self.engine).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
