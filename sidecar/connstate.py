"""The request side of a client connection as a state machine: which part of a request the
front awaits, and the transitions allowed between those states.

`sidecar.front.LeanProtocol` holds one `ReadState` and moves it only through `advance`; a
move the table does not allow is a bug in the front and raises `ConnStateError`.

    IDLE ──first byte──▶ HEAD ──head's end──▶ BODY ──message's end──▶ IDLE
                           │                    ▲
                           └─upgrade request─▶ UPGRADING
    IDLE, HEAD, BODY, UPGRADING ──bad request, CONNECT──▶ DONE (nothing more is parsed)
"""

from __future__ import annotations

import enum


class ReadState(enum.Enum):
    """Which part of a request the connection awaits."""

    IDLE = "idle"  # a request's first byte
    HEAD = "head"  # the rest of a request head
    BODY = "body"  # a request's body (with its chunk framing and trailer fields)
    # httptools stopped at an upgrade request's head: its body, if any, is read as this
    # request's by a new parser (the upgrade is ignored).
    UPGRADING = "upgrading"
    DONE = "done"  # a bad request or a CONNECT was read: nothing more is parsed


IDLE, HEAD, BODY, UPGRADING, DONE = ReadState

# Each state's allowed next states.
TRANSITIONS: dict[ReadState, frozenset[ReadState]] = {
    IDLE: frozenset((HEAD, DONE)),
    HEAD: frozenset((BODY, UPGRADING, DONE)),
    BODY: frozenset((IDLE, DONE)),
    UPGRADING: frozenset((BODY, DONE)),
    DONE: frozenset(),
}


class ConnStateError(RuntimeError):
    """A transition the table does not allow (a bug in the front, never the client's)."""


def advance(current: ReadState, new: ReadState) -> ReadState:
    """`new`, if the table allows moving there from `current`; else `ConnStateError`."""
    if new not in TRANSITIONS[current]:
        raise ConnStateError(f"connection read state {current.name} -> {new.name} is not allowed")
    return new
