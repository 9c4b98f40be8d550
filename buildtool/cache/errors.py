"""The helper's own errors: each names the path or argument at fault; the CLI exits 2."""

from __future__ import annotations

EXIT_OWN_ERROR = 2


class CacheError(Exception):
    """A failure of the helper itself (not of the build command)."""
