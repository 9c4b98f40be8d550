"""Tool-call ids: `call-` + a random UUID unless the family has native ids (docs/parsers.md)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

IdFactory = Callable[[], str]


def new_call_id() -> str:
    return f"call-{uuid.uuid4()}"


def counter_ids(prefix: str = "call-") -> IdFactory:
    """Deterministic ids (`call-0`, `call-1`, ...) for tests and benchmarks."""
    count = 0

    def make() -> str:
        nonlocal count
        value = f"{prefix}{count}"
        count += 1
        return value

    return make
