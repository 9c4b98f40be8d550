"""The ASGI service: OpenAI chat completions in front of one engine adapter."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from parsers.api import StreamParser
from parsers.errors import InvalidRequest
from parsers.plan import ParsePlan
from parsers.policy import plan_request, resolve_thinking
from sidecar import sse
from sidecar.chat import Accumulator, ChunkFactory, chunks_for, completion
from sidecar.config import SidecarConfig
from sidecar.engine_client import EngineClient, EngineStream
from sidecar.engines.base import EngineAdapter, EngineEvent, EngineRequest, Usage
from sidecar.errors import INTERNAL_ERROR, APIError, EngineError, envelope
from sidecar.guided import guided_schema
from sidecar.metrics import Metrics
from sidecar.parsing import parse_whole, parser_for
from sidecar.prompt import ChatTemplate
from sidecar.request import ChatRequest, decode_body, parse_chat_request

log = logging.getLogger("sidecar")
ROUTE_HEADER = "x-parser-route"


def error_response(error: APIError, route: str | None = None) -> JSONResponse:
    headers = {ROUTE_HEADER: route} if route else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


async def read_body(request: Request, limit: int) -> bytes:
    too_large = APIError(
        413, f"request body exceeds the limit of {limit} bytes", code="request_too_large"
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


class Sidecar:
    def __init__(
        self, config: SidecarConfig, adapter: EngineAdapter, template: ChatTemplate
    ) -> None:
        self.config = config
        self.template = template
        self.engine = EngineClient(config.engine_url, adapter, config.timeouts)
        self.metrics = Metrics(config.engine)

    # -- request preparation (no engine I/O) ---------------------------------------------

    def prepare(self, raw: bytes) -> tuple[ChatRequest, ParsePlan, EngineRequest]:
        body = decode_body(raw)
        chat = parse_chat_request(body)
        settings = self.config.settings
        thinking = resolve_thinking(settings, body)
        kwargs = body.get("chat_template_kwargs") or {}
        prompt = self.template.render(
            chat.messages, chat.tools, thinking=thinking, template_kwargs=kwargs
        )
        plan = plan_request(settings, body, prompt)
        engine_request = EngineRequest(
            model=self.config.model,
            prompt=prompt,
            sampling=chat.sampling,
            stream=chat.stream,
            guided_json=guided_schema(plan, body),
        )
        return chat, plan, engine_request

    # -- endpoints ------------------------------------------------------------------------

    async def chat_completions(self, request: Request) -> Response:
        started = time.perf_counter()
        route: str | None = None
        stream = False
        try:
            raw = await read_body(request, self.config.max_body_bytes)
            chat, plan, engine_request = self.prepare(raw)
            route, stream = plan.route, chat.stream
            self.metrics.route(route)
            factory = ChunkFactory(
                id=f"chatcmpl-{uuid.uuid4().hex}",
                created=int(time.time()),
                model=chat.model or self.config.model,
                include_usage=chat.include_usage,
            )
            if chat.stream:
                engine_stream = await self.engine.open_stream(engine_request)
                return StreamingResponse(
                    self._stream(engine_stream, parser_for(plan), factory, started),
                    media_type="text/event-stream",
                    headers={ROUTE_HEADER: route, "cache-control": "no-cache"},
                )
            event = await self._complete(request, engine_request)
            if event is None:  # the client went away: the engine request was cancelled
                self.metrics.done(499, time.perf_counter() - started, False, "client_disconnected")
                return Response(status_code=499)
            message = parse_whole(plan, event.text, event.finish_reason or "stop")
            body = completion(
                factory.id, factory.created, factory.model, message, event.usage, event.stop_reason
            )
            self.metrics.done(200, time.perf_counter() - started, stream=False)
            return JSONResponse(body, headers={ROUTE_HEADER: route})
        except InvalidRequest as exc:
            error = APIError(400, exc.message, param=exc.param, code=exc.code)
        except APIError as exc:
            error = exc
        except EngineError as exc:
            error = exc.to_api_error()
        except ClientDisconnect:
            self.metrics.done(499, time.perf_counter() - started, stream, "client_disconnected")
            return Response(status_code=499)
        except Exception:
            log.exception("unexpected error serving a chat completion")
            error = INTERNAL_ERROR
        self.metrics.done(error.status, time.perf_counter() - started, stream, error.code)
        return error_response(error, route)

    async def _complete(
        self, request: Request, engine_request: EngineRequest
    ) -> EngineEvent | None:
        """The engine's whole answer, or None when the client disconnects first.

        Starlette does not watch for disconnects on non-streamed responses, so the request's
        ASGI channel is watched here and the engine call cancelled (its connection closed).
        """
        result: list[EngineEvent] = []
        failure: list[Exception] = []
        async with anyio.create_task_group() as group:

            async def call() -> None:
                try:
                    result.append(await self.engine.complete(engine_request))
                except Exception as exc:  # re-raised below, unwrapped from the task group
                    failure.append(exc)
                group.cancel_scope.cancel()

            async def watch() -> None:
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(call)
            group.start_soon(watch)
        if failure:
            raise failure[0]
        return result[0] if result else None

    async def _stream(
        self,
        engine_stream: EngineStream,
        parser: StreamParser,
        factory: ChunkFactory,
        started: float,
    ) -> AsyncIterator[bytes]:
        acc = Accumulator()
        status, code = 200, None
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
                status, code = error.status, error.code
                yield b"".join([*tail, sse.encode(error.body()), sse.DONE_BYTES])
                return
            tail = [sse.encode(c) for c in chunks_for(factory, acc, parser.finish(reason))]
            final = factory.delta({}, parser.finish_reason or reason)
            final["choices"][0]["stop_reason"] = stop_reason
            tail.append(sse.encode(final))
            if factory.include_usage and usage is not None:
                tail.append(sse.encode(factory.usage(usage)))
            yield b"".join([*tail, sse.DONE_BYTES])
        except anyio.get_cancelled_exc_class():
            status, code = 499, "client_disconnected"  # the client went away: stop the engine
            raise
        except Exception:
            log.exception("unexpected error while streaming a chat completion")
            status, code = INTERNAL_ERROR.status, INTERNAL_ERROR.code
            yield sse.encode(INTERNAL_ERROR.body())
            yield sse.DONE_BYTES
        finally:
            with anyio.CancelScope(shield=True):
                await engine_stream.aclose()
            self.metrics.done(status, time.perf_counter() - started, True, code)

    async def models(self, request: Request) -> Response:
        card = {
            "id": self.config.model,
            "object": "model",
            "created": 0,
            "owned_by": f"sidecar-forge/{self.config.engine}",
        }
        return JSONResponse({"object": "list", "data": [card]})

    async def live(self, request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def health(self, request: Request) -> Response:
        if await self.engine.healthy():
            return JSONResponse({"status": "ok", "engine": self.config.engine})
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


def build_app(config: SidecarConfig, adapter: EngineAdapter, template: ChatTemplate) -> Starlette:
    sidecar = Sidecar(config, adapter, template)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await sidecar.engine.aclose()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", sidecar.chat_completions, methods=["POST"]),
            Route("/v1/models", sidecar.models, methods=["GET"]),
            Route("/live", sidecar.live, methods=["GET"]),
            Route("/health", sidecar.health, methods=["GET"]),
            Route("/metrics", sidecar.metrics_endpoint, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.sidecar = sidecar
    return app
