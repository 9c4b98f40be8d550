"""Server-sent events: decoding the engine's stream and encoding ours (pure functions)."""

from __future__ import annotations

import json
from typing import Any

DONE = "[DONE]"


class SSEDecoder:
    """Collects `data:` lines into events; one event per blank line (WHATWG SSE rules)."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self.size = 0  # characters of data in the event so far (a reader bounds it)

    def line(self, line: str) -> str | None:
        """Feed one line (without its newline); returns an event's data when one completes."""
        if not line:
            if not self._data:
                return None
            data = "\n".join(self._data)
            self._data = []
            self.size = 0
            return data
        if line.startswith(":"):
            return None  # comment / keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self.size += len(value)
        return None

    def data(self, value: str) -> None:
        """A `data:` line's value (what `line` does for one, without re-parsing the line)."""
        self._data.append(value)
        self.size += len(value)

    def flush(self) -> str | None:
        """Data of an event the stream ended without terminating with a blank line."""
        return self.line("")


_JSON = json.JSONEncoder(
    ensure_ascii=False
)  # made once: `json.dumps` with options makes one per call


def encode(payload: dict[str, Any]) -> bytes:
    # A lone surrogate (never valid UTF-8) is written as its JSON escape instead of failing.
    text = _JSON.encode(payload)
    return b"data: " + text.encode("utf-8", "backslashreplace") + b"\n\n"


DONE_BYTES = b"data: [DONE]\n\n"
