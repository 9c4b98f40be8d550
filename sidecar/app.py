"""The ASGI service: OpenAI chat completions in front of one engine adapter."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parsers.api import StreamParser
from parsers.plan import ParsePlan
from parsers.policy import plan_request
from parsers.settings import family_by_key
from sidecar import sse
from sidecar.asgi import (
    SSE_TYPE,
    ClientDisconnect,
    Receive,
    Scope,
    Send,
    header,
    send_json,
)
from sidecar.chat import Accumulator, ChunkFactory, chunks_for, completion
from sidecar.config import SidecarConfig
from sidecar.enforcement import Enforcement, probe_request
from sidecar.engine_client import EngineClient, EngineStream
from sidecar.engines.base import EngineAdapter, EngineRequest, Usage
from sidecar.errors import INTERNAL_ERROR, APIError, EngineError, envelope
from sidecar.exchange import AsgiExchange, Exchange
from sidecar.metrics import Metrics
from sidecar.output_schema import guided_schema
from sidecar.parsing import parse_whole, parser_for
from sidecar.prompt import ChatTemplate
from sidecar.request import ChatRequest, read_chat_request
from sidecar.structural import constraint_for

log = logging.getLogger("sidecar")
ROUTE_HEADER = "x-parser-route"
ROUTE_HEADER_BYTES = ROUTE_HEADER.encode()


def error_response(error: APIError, route: str | None = None) -> JSONResponse:
    headers = {ROUTE_HEADER: route} if route else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


class Sidecar:
    def __init__(
        self, config: SidecarConfig, adapter: EngineAdapter, template: ChatTemplate
    ) -> None:
        self.config = config
        self.template = template
        self.engine = EngineClient(
            config.engine_url,
            adapter,
            config.timeouts,
            api_key=config.engine_api_key,
            ca_bundle=config.engine_ca_bundle,
        )
        self.metrics = Metrics(config.engine)
        self.enforcement = Enforcement()
        self._enforcement_lock = asyncio.Lock()

    async def check_enforcement(self) -> None:
        """Ask the engine once whether it enforces structured output (`sidecar.enforcement`);
        concurrent callers share the one probe. A probe that fails teaches nothing: requests
        go on as before and the check is repeated later."""
        async with self._enforcement_lock:
            if not self.enforcement.due(time.monotonic()):
                return
            text: str | None
            try:
                text = (await self.engine.complete(probe_request(self.config.model))).text
            except EngineError as exc:
                log.warning("structured-output check: the engine failed it: %s", exc.message)
                text = None
            self.enforcement.record(time.monotonic(), self.config.engine, text)
            if self.enforcement.message is not None:
                log.error("%s", self.enforcement.message)

    async def require_enforcement(self) -> None:
        """Before a constrained request: a 502 naming the engine flag to change when the
        engine is known not to enforce structured output."""
        if self.enforcement.due(time.monotonic()):
            await self.check_enforcement()
        if self.enforcement.message is not None:
            raise APIError(
                502, self.enforcement.message, type="engine_error", code="engine_misconfigured"
            )

    # -- request preparation (no engine I/O) ---------------------------------------------

    def prepare(self, raw: bytes) -> tuple[ChatRequest, ParsePlan, EngineRequest]:
        settings = self.config.settings
        # The one validation of the body: typed values from here on.
        chat = read_chat_request(raw, settings)
        facts = chat.facts
        thinking = facts.thinking
        # The sidecar's own switch reaches the template only when the request's `thinking`
        # field or the deployment decided; otherwise the template's own default applies.
        switch = facts.thinking_field is not None or settings.thinking_default is not None
        prompt = self.template.render(
            chat.messages,
            chat.tools if chat.tools_declared else None,
            thinking=thinking if switch else None,
            template_kwargs=chat.chat_template_kwargs,
            reasoning_effort=facts.effort,
            parts=chat.content_parts,
            prepared=True,
            add_generation_prompt=chat.add_generation_prompt,
            continue_final_message=chat.continue_final_message,
        )
        plan = plan_request(settings, facts, prompt)
        constraint = constraint_for(
            plan,
            family_by_key(settings.family),
            guided_schema(plan, chat.response_format, chat.parallel_tool_calls),
            chat.structural_tag,
            parallel=chat.parallel_tool_calls,
            prompt=prompt,
            thinking=thinking,
            choice=self.config.forced_choice,
        )
        engine_request = EngineRequest(
            model=self.config.model,
            prompt=prompt,
            sampling=chat.sampling,
            stream=chat.stream,
            guided_json=constraint.guided_json,
            structural_tag=constraint.structural_tag,
        )
        return chat, plan, engine_request

    # -- endpoints ------------------------------------------------------------------------

    def _served_name(self, requested: str | None) -> str:
        """The model name a response carries: the served name the request used, else the
        first served name (`--served-model-name`, default `--model`)."""
        names = self.config.served_names
        return requested if requested in names else names[0]

    async def chat_completions(self, exchange: Exchange) -> None:
        """`POST /v1/chat/completions` (over ASGI: `AsgiExchange`)."""
        metrics = self.metrics
        metrics.in_flight += 1
        started = time.perf_counter()
        route: str | None = None
        stream = False
        responded = False
        try:
            try:
                raw = await exchange.read_body(self.config.max_body_bytes)
                chat, plan, engine_request = self.prepare(raw)
                route, stream = plan.route, chat.stream
                if (
                    engine_request.guided_json is not None
                    or engine_request.structural_tag is not None
                ) and self.enforcement.state != "enforced":
                    await self.require_enforcement()
                # The parser, the response's id and the disconnect watch's timer are made
                # once the engine request is written, while the engine works: they are not
                # needed before its answer.
                parser: list[StreamParser] = []
                factories: list[ChunkFactory] = []
                watch = exchange.watch(armed=False)

                def after_write() -> None:
                    watch.arm()  # a stream's watch is another one: nothing happens then
                    parser.append(parser_for(plan))
                    factories.append(
                        ChunkFactory(
                            id=f"chatcmpl-{os.urandom(16).hex()}",
                            created=int(time.time()),
                            model=self._served_name(chat.model),
                            include_usage=chat.include_usage,
                        )
                    )

                if stream:
                    engine_stream = await self.engine.open_stream(engine_request, after_write)
                    await self._stream(
                        exchange,
                        engine_stream,
                        parser[0],
                        factories[0],
                        started,
                        route,
                        one_call=not chat.parallel_tool_calls,
                    )
                    return
                with watch:
                    event = await self.engine.complete(engine_request, after_write)
                if watch.gone:  # the engine request was cancelled (its connection closed)
                    metrics.done(499, time.perf_counter() - started, False, "client_disconnected")
                    return
                message = parse_whole(plan, event.text, event.finish_reason or "stop", parser[0])
                factory = factories[0]
                body = completion(
                    factory.id,
                    factory.created,
                    factory.model,
                    message,
                    event.usage,
                    event.stop_reason,
                    one_call=not chat.parallel_tool_calls,
                )
                elapsed = time.perf_counter() - started
                await exchange.respond_json(200, body, [(ROUTE_HEADER_BYTES, route.encode())])
                responded = True
                # Bookkeeping after the response left: it is not the client's wait.
                if event.usage is not None:
                    metrics.tokens(event.usage.prompt_tokens, event.usage.completion_tokens)
                metrics.done(200, elapsed, stream=False)
                return
            except APIError as exc:
                error = exc
            except EngineError as exc:
                error = exc.to_api_error()
            except ClientDisconnect:
                metrics.done(499, time.perf_counter() - started, stream, "client_disconnected")
                return
            except Exception:
                log.exception("unexpected error serving a chat completion")
                if responded:  # the client has its answer: never a second response
                    return
                error = INTERNAL_ERROR
            metrics.done(error.status, time.perf_counter() - started, stream, error.code)
            headers = [(ROUTE_HEADER_BYTES, route.encode())] if route else []
            headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in error.headers)
            await exchange.respond_json(error.status, error.body(), headers)
        finally:
            metrics.in_flight -= 1
            # Counted once the response is finished (as the status is): not the client's wait.
            if route is not None:
                metrics.route(route)

    async def _stream(
        self,
        exchange: Exchange,
        engine_stream: EngineStream,
        parser: StreamParser,
        factory: ChunkFactory,
        started: float,
        route: str,
        one_call: bool = False,
    ) -> None:
        status, code = 200, None
        try:
            send = exchange.send
            with exchange.watch() as watch:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            SSE_TYPE,
                            (b"cache-control", b"no-cache"),
                            (ROUTE_HEADER_BYTES, route.encode()),
                        ],
                    }
                )
                events = self._events(engine_stream, parser, factory, started, one_call)
                async for data in events:
                    if isinstance(data, APIError):
                        status, code = data.status, data.code
                        continue
                    await send({"type": "http.response.body", "body": data, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            if watch.gone:  # the client went away: the engine stream is closed below
                status, code = 499, "client_disconnected"
        except OSError:  # ASGI servers other than uvicorn may raise on sending to a gone client
            status, code = 499, "client_disconnected"
        finally:
            await engine_stream.aclose()  # no await inside: completes even when cancelled
            self.metrics.done(status, time.perf_counter() - started, True, code)

    async def _events(
        self,
        engine_stream: EngineStream,
        parser: StreamParser,
        factory: ChunkFactory,
        started: float,
        one_call: bool = False,
    ) -> AsyncIterator[bytes | APIError]:
        """The SSE bytes to send, per engine network read; an `APIError` item records the
        failure the stream reports in-band (its event is among the bytes). `one_call`: calls
        after the first are not sent (`parallel_tool_calls: false`)."""
        acc = Accumulator(one_call=one_call)
        first_token = True
        reason = "stop"
        stop_reason: str | int | None = None
        usage: Usage | None = None
        try:
            yield sse.encode(factory.role())
            try:
                async for batch in engine_stream.batches():
                    out: list[bytes] = []
                    for event in batch:
                        usage = event.usage or usage
                        if event.finish_reason:
                            reason, stop_reason = event.finish_reason, event.stop_reason
                        if event.text:
                            chunks = chunks_for(factory, acc, parser.feed(event.text))
                            out.extend(sse.encode(chunk) for chunk in chunks)
                    if out:
                        if first_token:
                            first_token = False
                            self.metrics.first_token(time.perf_counter() - started)
                        yield b"".join(out)
            except EngineError as exc:
                # Deliver what the parser still holds (nothing lost), then report the failure.
                log.warning("engine failed mid-stream: %s", exc.message)
                tail = [sse.encode(c) for c in chunks_for(factory, acc, parser.finish("length"))]
                error = exc.to_api_error()
                yield error
                yield b"".join([*tail, sse.encode(error.body()), sse.DONE_BYTES])
                return
            if usage is not None:
                self.metrics.tokens(usage.prompt_tokens, usage.completion_tokens)
            tail = [sse.encode(c) for c in chunks_for(factory, acc, parser.finish(reason))]
            final = factory.delta({}, parser.finish_reason or reason)
            final["choices"][0]["stop_reason"] = stop_reason
            tail.append(sse.encode(final))
            if factory.include_usage and usage is not None:
                tail.append(sse.encode(factory.usage(usage)))
            yield b"".join([*tail, sse.DONE_BYTES])
        except Exception:
            log.exception("unexpected error while streaming a chat completion")
            yield INTERNAL_ERROR
            yield sse.encode(INTERNAL_ERROR.body()) + sse.DONE_BYTES

    async def models(self, request: Request) -> Response:
        cards = [
            {
                "id": name,
                "object": "model",
                "created": 0,
                "owned_by": f"sidecar-forge/{self.config.engine}",
                "root": self.config.model,
            }
            for name in self.config.served_names
        ]
        return JSONResponse({"object": "list", "data": cards})

    async def live(self, request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def health(self, request: Request) -> Response:
        if await self.engine.healthy():
            # The engine's first healthy answer is when its configuration can be checked.
            if self.enforcement.due(time.monotonic()):
                await self.check_enforcement()
            body: dict[str, Any] = {"status": "ok", "engine": self.config.engine}
            if self.enforcement.message is not None:
                body["structured_outputs"] = self.enforcement.message
            return JSONResponse(body)
        error = APIError(
            503,
            f"engine at {self.config.engine_url} is not healthy yet",
            type="engine_error",
            code="engine_unavailable",
        )
        return error_response(error)

    async def metrics_endpoint(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=self.metrics.content_type)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    body: dict[str, Any] = envelope(str(exc.detail), kind, None, str(exc.status_code))
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


class _Endpoint:
    """An `Exchange` handler as a Starlette endpoint (a bare method would get a `Request`)."""

    def __init__(self, handler: Callable[[Exchange], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(AsgiExchange(scope, receive, send))


_UNAUTHORIZED = envelope(
    "missing or incorrect API key: send 'Authorization: Bearer <key>'",
    "invalid_request_error",
    None,
    "invalid_api_key",
)


class SidecarApp:
    """The ASGI app: `POST /v1/chat/completions` straight to the chat handler (an
    `AsgiExchange`), everything else (the other endpoints, 404/405s, lifespan) through
    Starlette. The HTTP front (`sidecar.front`) asks `direct_route` first and serves the
    chat route as an `Exchange` itself, without ASGI messages."""

    def __init__(self, sidecar: Sidecar, starlette: Starlette) -> None:
        self.sidecar = sidecar
        self.starlette = starlette
        key = sidecar.config.api_key
        self._bearer = f"Bearer {key}".encode() if key else None

    def direct_route(self, method: str, path: str) -> Callable[[Exchange], Awaitable[None]] | None:
        """The `Exchange` handler serving `method path`, or None (served over ASGI)."""
        if path == "/v1/chat/completions" and method == "POST":
            return self.sidecar.chat_completions if self._bearer is None else self.chat
        return None

    async def chat(self, exchange: Exchange) -> None:
        """The chat route behind the API key check."""
        if self._bearer is not None and not self._authorized(exchange.header(b"authorization")):
            await exchange.respond_json(401, _UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
            return
        await self.sidecar.chat_completions(exchange)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            handler = self.direct_route(scope["method"], scope["path"])
            if handler is not None:
                await handler(AsgiExchange(scope, receive, send))
                return
            if (
                self._bearer is not None
                and scope["path"].startswith("/v1/")
                and not self._authorized(header(scope, b"authorization"))
            ):
                await send_json(send, 401, _UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
                return
        await self.starlette(scope, receive, send)

    def _authorized(self, value: bytes | None) -> bool:
        """`Authorization: Bearer <--api-key>`, compared in constant time."""
        assert self._bearer is not None
        return hmac.compare_digest(value or b"", self._bearer)


def build_app(config: SidecarConfig, adapter: EngineAdapter, template: ChatTemplate) -> SidecarApp:
    sidecar = Sidecar(config, adapter, template)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await sidecar.engine.aclose()

    app = Starlette(
        routes=[
            # Reached through Starlette only by other methods (for its 405).
            Route("/v1/chat/completions", _Endpoint(sidecar.chat_completions), methods=["POST"]),
            Route("/v1/models", sidecar.models, methods=["GET"]),
            Route("/live", sidecar.live, methods=["GET"]),
            Route("/health", sidecar.health, methods=["GET"]),
            Route("/metrics", sidecar.metrics_endpoint, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.sidecar = sidecar
    return SidecarApp(sidecar, app)
