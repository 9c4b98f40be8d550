"""Typed errors of the parsers package."""

from __future__ import annotations


class ConfigError(ValueError):
    """A deployment configuration that cannot be served (stops startup).

    The message names the offending variable or parser flag and the accepted values.
    """


class InvalidRequest(ValueError):
    """A request the selected configuration cannot serve: a client mistake (HTTP 400)."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
