"""The uvicorn settings the sidecar is served with.

uvicorn runs the server (listening sockets, lifespan, signals, graceful shutdown, the `date`
header, logging); each client connection is served by the sidecar's own HTTP/1.1 front,
`sidecar.front.LeanProtocol`, handed to uvicorn through its `http=<protocol class>` setting.
"""

from __future__ import annotations

import logging
from typing import Any

from sidecar.config import DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT
from sidecar.front import LeanProtocol

# The uvicorn releases whose server hooks for protocols `sidecar.front.LeanProtocol` uses
# were tested (pinned in pyproject.toml; the tests check the pin and the installed release).
UVICORN_TESTED = ((0, 30), (0, 55))


def server_options(
    log_level: int = logging.INFO,
    head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
) -> dict[str, Any]:
    """The uvicorn settings every sidecar is served with (the CLI's and the tests')."""
    protocol = LeanProtocol
    if (head_timeout, body_timeout) != (DEFAULT_HEAD_TIMEOUT, DEFAULT_BODY_TIMEOUT):
        protocol = protocol.with_timeouts(head_timeout, body_timeout)
    return {
        "http": protocol,
        # Keep idle client connections longer than common load-balancer idle timeouts (60 s),
        # so a balancer never reuses a connection the sidecar is closing.
        "timeout_keep_alive": 65,
        # X-Forwarded-* would only change the client address in the access log: nothing the
        # sidecar answers depends on it, and uvicorn's middleware for it cost ~0.05 ms/request.
        "proxy_headers": False,
        # No `server: uvicorn` header: it names the implementation to every client and costs
        # a header's validation and bytes on each response (the `date` header stays).
        "server_header": False,
        # Access lines are INFO records: above that level uvicorn would still build each one.
        "access_log": log_level <= logging.INFO,
    }
