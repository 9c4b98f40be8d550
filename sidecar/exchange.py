"""One request and its response as the chat route sees them: `Exchange`.

The chat route is written once against this interface. Any ASGI server reaches it through
`AsgiExchange` (its scope, `receive` and `send`). The HTTP front's request (`sidecar.front`)
is an `Exchange` itself: the route's body, whole response and disconnect watch then take no
ASGI message dicts and no watcher task (the chat route is the sidecar's hot path; see
docs/sidecar.md, Performance).
"""

from __future__ import annotations

from collections.abc import Awaitable
from types import TracebackType
from typing import Any, Protocol

from sidecar.asgi import (
    DisconnectWatch,
    Message,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    send_json,
)

Headers = list[tuple[bytes, bytes]]


class Watch(Protocol):
    """`with exchange.watch() as watch:` cancels the block when the client leaves; the
    block's `CancelledError` is then swallowed and `watch.gone` is True."""

    gone: bool

    def arm(self) -> None:
        """Start watching now (a watch made with `armed=False`)."""

    def __enter__(self) -> Watch: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...


class Exchange(Protocol):
    """A request being answered: its headers and body, and its response (a whole JSON one,
    or ASGI `send` messages for a stream)."""

    def receive(self) -> Awaitable[Message]:
        """ASGI `receive` (a stream's disconnect is watched with `watch()`)."""

    def send(self, message: Message) -> Awaitable[None]:
        """ASGI `send` (a stream's response)."""

    def header(self, name: bytes) -> bytes | None:
        """The first value of request header `name` (lowercase)."""

    async def read_body(self, limit: int) -> bytes:
        """The whole request body; a 413 `APIError` past `limit` bytes, `ClientDisconnect`
        if the client left first."""

    async def respond_json(self, status: int, payload: Any, headers: Headers | None = None) -> None:
        """The whole response: `payload` as JSON, with `headers` after the content ones."""

    def watch(self, armed: bool = True) -> Watch:
        """A disconnect watch (`armed=False`: it starts at `arm()`)."""


class AsgiExchange:
    """An `Exchange` over any ASGI server's scope, `receive` and `send`."""

    __slots__ = ("receive", "scope", "send")

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send

    def header(self, name: bytes) -> bytes | None:
        return header(self.scope, name)

    async def read_body(self, limit: int) -> bytes:
        return await read_body(self.scope, self.receive, limit)

    async def respond_json(self, status: int, payload: Any, headers: Headers | None = None) -> None:
        await send_json(self.send, status, payload, headers)

    def watch(self, armed: bool = True) -> DisconnectWatch:
        return DisconnectWatch(self.receive, armed=armed)
