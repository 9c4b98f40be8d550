"""Fake inference engines for tests, benchmarks and image smoke tests (no GPU, no model).

Real HTTP servers speaking each engine's own wire format — vLLM and `trtllm-serve`
`POST /v1/completions`, SGLang `POST /generate` (cumulative or incremental `text`) — that
replay scripted model output in token-sized chunks. A script is picked by a marker
`[[script:NAME]]` anywhere in the prompt; otherwise the default script plays. Scripts can
inject faults: an HTTP error, a connection closed mid-stream, a hang, a malformed event.

    python -m sidecar.fake_engine vllm --port 8001 --text 'Hello!'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_SCRIPT_MARK = re.compile(r"\[\[script:([\w.-]+)\]\]")
# Special tokens arrive whole, as a real detokenizer emits them.
_SPECIAL = re.compile(
    r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|</?think>"
    r"|<\|(?:channel|tool_call|tool_response|turn|tool)>|<(?:channel|tool_call|tool_response|turn|tool)\|>"
)


@dataclass
class Script:
    text: str
    seed: int = 0  # chunk sizes: a seeded random split into 1-6 character pieces
    chunks: list[str] | None = None  # explicit chunks (overrides the seeded split)
    fail_status: int | None = None  # answer this HTTP status instead of generating
    close_after: int | None = None  # drop the connection after N chunks
    hang_after: int | None = None  # stop sending (but keep the connection) after N chunks
    malformed_after: int | None = None  # send a non-JSON event after N chunks
    delay: float = 0.0  # seconds between chunks
    stop_token: int = 151645  # SGLang's `matched` for an EOS stop

    def pieces(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        return chunk_text(self.text, self.seed)


def chunk_text(text: str, seed: int = 0, longest: int = 6) -> list[str]:
    """Token-like chunks: special tokens whole, other text in seeded 1..longest pieces."""
    rng = random.Random(seed)
    out: list[str] = []
    pos = 0
    for match in [*_SPECIAL.finditer(text), None]:
        end = match.start() if match else len(text)
        while pos < end:
            size = min(rng.randint(1, longest), end - pos)
            out.append(text[pos : pos + size])
            pos += size
        if match:
            out.append(match.group())
            pos = match.end()
    return out


@dataclass
class Generation:
    """The outcome of one request: chunks to send, why it stopped, token counts."""

    chunks: list[str]
    finish: str  # "stop" | "length"
    stop_reason: str | None
    prompt_tokens: int


def _generate(script: Script, prompt: str, max_tokens: Any, stop: Any) -> Generation:
    chunks = script.pieces()
    finish, stop_reason = "stop", None
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if stops:
        text, cut = "".join(chunks), None
        for s in stops:
            at = text.find(s)
            if s and at >= 0 and (cut is None or at < cut):
                cut, stop_reason = at, s
        if cut is not None:
            chunks, acc = [], 0
            for piece in script.pieces():
                if acc >= cut:
                    break
                chunks.append(piece[: cut - acc])
                acc += len(piece)
    if isinstance(max_tokens, int) and len(chunks) > max_tokens:
        chunks, finish, stop_reason = chunks[:max_tokens], "length", None
    return Generation(chunks, finish, stop_reason, max(1, len(prompt.split())))


def _single_value(schema: Any) -> tuple[Any] | None:
    """The one value a schema allows (`const`, or an `enum` of one item), else None."""
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return (schema["const"],)
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        return (enum[0],)
    return None


class FakeEngine:
    """One fake engine: `kind` is vllm, sglang or trtllm."""

    def __init__(
        self,
        kind: str,
        *,
        incremental: bool = False,
        default: Script | None = None,
        api_key: str | None = None,
        enforces_guided: bool = True,
    ):
        if kind not in ("vllm", "sglang", "trtllm"):
            raise ValueError(f"unknown engine kind {kind!r}")
        self.kind = kind
        self.incremental = incremental  # SGLang --incremental-streaming-output
        self.default = default or Script("Hello! How can I help you today?")
        self.scripts: dict[str, Script] = {}
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []  # each generate request's Authorization
        # As `vllm serve --api-key`: generation needs `Authorization: Bearer <key>` (401 else);
        # /health stays open.
        self.api_key = api_key
        self.healthy = True
        # A guided schema that allows exactly one value (a `const`, a one-item `enum`) is
        # answered with that value, as an engine applying the constraint must; False plays
        # an engine that ignores guided decoding (vLLM gating it behind --reasoning-parser).
        self.enforces_guided = enforces_guided
        self.started = 0
        self.completed = 0
        self.cancelled = 0  # streams that ended because the client went away
        path = "/generate" if kind == "sglang" else "/v1/completions"
        self.app = Starlette(
            routes=[
                Route(path, self._generate, methods=["POST"]),
                Route("/health", self._health, methods=["GET"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    def script_for(self, prompt: str) -> Script:
        match = _SCRIPT_MARK.search(prompt)
        if match and match.group(1) in self.scripts:
            return self.scripts[match.group(1)]
        return self.default

    async def _health(self, request: Request) -> Response:
        return Response(status_code=200 if self.healthy else 503)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    # -- request handling --------------------------------------------------------------

    async def _generate(self, request: Request) -> Response:
        authorization = request.headers.get("authorization")
        self.authorizations.append(authorization)
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        body = await request.json()
        self.requests.append(body)
        problem = self._validate(body)
        if problem:
            return self._error(400, problem)
        if self.kind == "sglang":
            prompt = body["text"]
            params = body.get("sampling_params") or {}
            max_tokens, stop = params.get("max_new_tokens"), params.get("stop")
        else:
            prompt = body["prompt"]
            max_tokens, stop = body.get("max_tokens"), body.get("stop")
        script = self.script_for(prompt)
        if script.fail_status is not None:
            return self._error(script.fail_status, "scripted engine failure")
        only = _single_value(self._guided_schema(body)) if self.enforces_guided else None
        if only is not None:
            script = Script(json.dumps(only[0]))
        gen = _generate(script, prompt, max_tokens, stop)
        if not body.get("stream"):
            if script.hang_after is not None:
                while not await request.is_disconnected():
                    await asyncio.sleep(0.05)
                self.cancelled += 1
                return Response(status_code=499)
            if script.malformed_after is not None:
                return Response(b'{"choices": [', media_type="application/json")
            return JSONResponse(self._whole(gen))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(
            self._stream(script, gen, include_usage), media_type="text/event-stream"
        )

    def _guided_schema(self, body: Mapping[str, Any]) -> Any:
        """The guided-JSON schema of a request, in the engine's own field."""
        if self.kind == "sglang":
            raw = (body.get("sampling_params") or {}).get("json_schema")
            return json.loads(raw) if isinstance(raw, str) else None
        if self.kind == "trtllm":
            fmt = body.get("response_format") or {}
            return fmt.get("schema") if fmt.get("type") == "json" else None
        outputs = body.get("structured_outputs")
        if isinstance(outputs, Mapping):
            return outputs.get("json")
        return body.get("guided_json")

    def _validate(self, body: Mapping[str, Any]) -> str | None:
        if self.kind == "sglang":
            if not isinstance(body.get("text"), str):
                return "'text' must be a string"
            schema = (body.get("sampling_params") or {}).get("json_schema")
            if schema is not None and not isinstance(schema, str):
                return "sampling_params.json_schema must be a JSON string"
            return None
        if not isinstance(body.get("prompt"), str) or not isinstance(body.get("model"), str):
            return "'model' and 'prompt' are required"
        if self.kind == "trtllm":
            # trtllm-serve's request models forbid unknown fields.
            unknown = set(body) - _TRTLLM_FIELDS
            if unknown:
                return f"Extra inputs are not permitted: {sorted(unknown)}"
            if body.get("stream_options") and not body.get("stream"):
                return "Stream options can only be defined when stream is true."
        return None

    def _error(self, status: int, message: str) -> Response:
        if self.kind == "sglang":
            return JSONResponse({"error": {"message": message}}, status_code=status)
        body = {"object": "error", "message": message, "type": "BadRequestError", "code": status}
        return JSONResponse(body, status_code=status)

    # -- wire formats ----------------------------------------------------------------------

    def _usage(self, gen: Generation, produced: int) -> dict[str, int]:
        return {
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": produced,
            "total_tokens": gen.prompt_tokens + produced,
        }

    def _sglang_event(
        self, rid: str, text: str, gen: Generation, produced: int, done: bool, script: Script
    ) -> dict[str, Any]:
        finish: dict[str, Any] | None = None
        if done:
            if gen.finish == "length":
                finish = {"type": "length", "length": produced}
            else:
                finish = {"type": "stop", "matched": gen.stop_reason or script.stop_token}
        return {
            "text": text,
            "output_ids": list(range(produced)),
            "meta_info": {
                "id": rid,
                "finish_reason": finish,
                "prompt_tokens": gen.prompt_tokens,
                "completion_tokens": produced,
                "cached_tokens": 0,
            },
        }

    def _completion_chunk(
        self, cid: str, text: str, finish: str | None, stop_reason: str | None
    ) -> dict[str, Any]:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
            "stop_reason": stop_reason,
        }
        return {
            "id": cid,
            "object": "text_completion",
            "created": int(time.time()),
            "model": "fake",
            "choices": [choice],
            "usage": None,
        }

    def _whole(self, gen: Generation) -> dict[str, Any]:
        text = "".join(gen.chunks)
        if self.kind == "sglang":
            script = Script(text)
            return self._sglang_event("r", text, gen, len(gen.chunks), True, script)
        cid = f"cmpl-{uuid.uuid4().hex}"
        chunk = self._completion_chunk(cid, text, gen.finish, gen.stop_reason)
        chunk["usage"] = self._usage(gen, len(gen.chunks))
        return chunk

    async def _stream(
        self, script: Script, gen: Generation, include_usage: bool
    ) -> AsyncIterator[bytes]:
        self.started += 1
        rid = uuid.uuid4().hex
        finished = False
        try:
            sent = ""
            for i, piece in enumerate(gen.chunks):
                if script.close_after is not None and i == script.close_after:
                    raise ConnectionAbortedError("scripted: engine closes mid-stream")
                if script.hang_after is not None and i == script.hang_after:
                    await asyncio.sleep(3600)
                if script.malformed_after is not None and i == script.malformed_after:
                    yield b'data: {"choices": [{"text": "unterminated\n\n'
                    yield b"data: [DONE]\n\n"
                    finished = True
                    return
                if script.delay:
                    await asyncio.sleep(script.delay)
                sent += piece
                last = i == len(gen.chunks) - 1
                if self.kind == "sglang":
                    text = piece if self.incremental else sent
                    event = self._sglang_event(rid, text, gen, i + 1, last, script)
                else:
                    event = self._completion_chunk(
                        rid,
                        piece,
                        gen.finish if last else None,
                        gen.stop_reason if last else None,
                    )
                yield _sse(event)
            if not gen.chunks:  # nothing generated: still a final event
                if self.kind == "sglang":
                    yield _sse(self._sglang_event(rid, "", gen, 0, True, script))
                else:
                    yield _sse(self._completion_chunk(rid, "", gen.finish, gen.stop_reason))
            if include_usage and self.kind != "sglang":
                usage = self._completion_chunk(rid, "", None, None)
                usage["choices"], usage["usage"] = [], self._usage(gen, len(gen.chunks))
                yield _sse(usage)
            yield b"data: [DONE]\n\n"
            finished = True
        finally:
            if finished:
                self.completed += 1
            elif script.close_after is None:
                self.cancelled += 1


def _sse(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


_TRTLLM_FIELDS = frozenset(
    {
        "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
        "max_tokens", "n", "presence_penalty", "seed", "stop", "stream", "stream_options",
        "suffix", "temperature", "top_p", "user", "lora_request", "use_beam_search", "top_k",
        "top_p_min", "min_p", "repetition_penalty", "length_penalty", "early_stopping",
        "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens",
        "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens",
        "return_context_logits", "detokenize", "add_special_tokens", "response_format",
        "disaggregated_params",
    }
)  # fmt: skip


# -- running servers in a background thread (tests, benchmarks) ----------------------------


@dataclass
class RunningServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread = field(repr=False)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(5)


def serve_in_thread(app: Any, host: str = "127.0.0.1", **options: Any) -> RunningServer:
    """Serve an ASGI app on a free loopback port in a daemon thread; returns once listening.
    `options` are uvicorn settings overriding the defaults here (a sidecar's own)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    settings: dict[str, Any] = {
        "log_level": "warning",
        "lifespan": "on",
        "timeout_graceful_shutdown": 1,
        "timeout_keep_alive": 65,
        "backlog": 1024,
    }
    config = uvicorn.Config(app, **{**settings, **options})
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.01)
    return RunningServer(f"http://{host}:{port}", server, thread)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sidecar.fake_engine", description=__doc__)
    p.add_argument("kind", choices=("vllm", "sglang", "trtllm"))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--text", default=None, help="the default script's output")
    p.add_argument("--scripts", default=None, help='JSON file: {"NAME": {"text": ...}, ...}')
    p.add_argument("--incremental", action="store_true", help="SGLang incremental output")
    p.add_argument("--api-key", default=None, help="require this bearer token (as vLLM's)")
    args = p.parse_args(argv)
    engine = FakeEngine(args.kind, incremental=args.incremental, api_key=args.api_key)
    if args.text is not None:
        engine.default = Script(args.text)
    if args.scripts:
        with open(args.scripts, encoding="utf-8") as f:
            for name, spec in json.load(f).items():
                engine.scripts[name] = Script(**spec)
    uvicorn.run(
        engine.app, host=args.host, port=args.port, log_level="warning", timeout_keep_alive=65
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
