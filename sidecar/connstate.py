"""A client connection's state machines and the transitions allowed in each.

`ReadState`: which part of a request the connection awaits (one per connection,
`sidecar.front.LeanProtocol.read`):

    IDLE ──first byte──▶ HEAD ──head's end──▶ BODY ──message's end──▶ IDLE
                           │                    ▲
                           └─upgrade request─▶ UPGRADING
    IDLE, HEAD, BODY, UPGRADING ──bad request, CONNECT──▶ DONE (nothing more is parsed)

`ResponseState`: how far a request's response is (one per request,
`sidecar.front.Cycle.response`):

    PENDING ──head built──▶ STARTED ──last body bytes written──▶ COMPLETE

The front moves a state only through `advance`; a move `TRANSITIONS` does not allow is a bug
in the front and raises `ConnStateError`.
"""

from __future__ import annotations

import enum
from typing import TypeVar


class ReadState(enum.Enum):
    """Which part of a request the connection awaits."""

    IDLE = "idle"  # a request's first byte
    HEAD = "head"  # the rest of a request head
    BODY = "body"  # a request's body (with its chunk framing and trailer fields)
    # httptools stopped at an upgrade request's head: its body, if any, is read as this
    # request's by a new parser (the upgrade is ignored).
    UPGRADING = "upgrading"
    DONE = "done"  # a bad request or a CONNECT was read: nothing more is parsed


class ResponseState(enum.Enum):
    """How far a request's response is."""

    PENDING = "pending"  # no response head yet
    STARTED = "started"  # the head was built (written, or held for the first body bytes)
    COMPLETE = "complete"  # the whole response was written


IDLE, HEAD, BODY, UPGRADING, DONE = ReadState
PENDING, STARTED, COMPLETE = ResponseState

State = ReadState | ResponseState

# Each state's allowed next states (both machines: their members are distinct keys).
TRANSITIONS: dict[State, frozenset[State]] = {
    IDLE: frozenset((HEAD, DONE)),
    HEAD: frozenset((BODY, UPGRADING, DONE)),
    BODY: frozenset((IDLE, DONE)),
    UPGRADING: frozenset((BODY, DONE)),
    DONE: frozenset(),
    PENDING: frozenset((STARTED,)),
    STARTED: frozenset((COMPLETE,)),
    COMPLETE: frozenset(),
}


class ConnStateError(RuntimeError):
    """A transition the table does not allow (a bug in the front, never the client's)."""


S = TypeVar("S", ReadState, ResponseState)


def advance(current: S, new: S) -> S:
    """`new`, if the table allows moving there from `current`; else `ConnStateError`."""
    if new not in TRANSITIONS[current]:
        kind = type(current).__name__
        raise ConnStateError(f"{kind} {current.name} -> {new.name} is not allowed")
    return new
