"""HTTP errors of the sidecar in the OpenAI error envelope."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """An error answered to the client as `{"error": {message, type, param, code}}`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers  # extra response headers (Retry-After of a 429)

    def body(self) -> dict[str, Any]:
        return envelope(self.message, self.type, self.param, self.code)


def envelope(message: str, type: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


class EngineError(Exception):
    """The engine failed: unreachable, timed out, answered an error or spoke garbage.

    `status` is the HTTP status the sidecar answers when nothing was streamed yet.
    """

    def __init__(
        self, status: int, message: str, code: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers

    def to_api_error(self) -> APIError:
        kind = "invalid_request_error" if self.status == 400 else "engine_error"
        return APIError(self.status, self.message, type=kind, code=self.code, headers=self.headers)


INTERNAL_ERROR = APIError(
    500, "internal server error", type="internal_server_error", code="internal_error"
)
