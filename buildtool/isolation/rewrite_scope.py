"""Assertion rewriting for the plugin's own package only, not the project it ships beside.

pytest rewrites the asserts of every top-level package of a distribution that declares a
`pytest11` plugin, taking them all for plugin code (from the RECORD, or from the
`sidecar_forge.egg-info` an editable install leaves in the source tree). This distribution ships
the project's libraries too: `parsers` and `sidecar` are code under test, not plugin code, and
their asserts are internal invariants whose messages need no introspection. Importing them
through the rewrite hook (it reads and hashes each source file on every import) cost an
isolated child ~9 ms for a test that parses one call, and every import of them in any session.
"""

from __future__ import annotations

from typing import Any

# The distribution's top-level packages besides `buildtool` (checked against its metadata by
# tests/isolation/test_rewrite_scope.py, so this list cannot fall behind the packaging).
LIBRARY_PACKAGES = ("parsers", "sidecar")


def concerned(rewrite_hook: Any) -> bool:
    """Whether pytest marked any of the library packages for rewriting (nothing to do else)."""
    marked = getattr(rewrite_hook, "_must_rewrite", None)
    return isinstance(marked, set) and any(name in marked for name in LIBRARY_PACKAGES)


def limit(rewrite_hook: Any) -> None:
    """Take the library packages off `rewrite_hook`'s list (pytest's AssertionRewritingHook;
    anything else, e.g. under --assert=plain, is left alone). Modules already imported stay as
    they were imported."""
    marked = getattr(rewrite_hook, "_must_rewrite", None)
    cache = getattr(rewrite_hook, "_marked_for_rewrite_cache", None)
    if not isinstance(marked, set) or not isinstance(cache, dict):
        return
    for name in LIBRARY_PACKAGES:
        marked.discard(name)
    for name in [n for n in cache if n.split(".", 1)[0] in LIBRARY_PACKAGES]:
        del cache[name]
