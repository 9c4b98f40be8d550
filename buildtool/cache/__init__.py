"""Content-stamp build cache: hash the inputs, keep a stamp in the cache, align mtimes, build.

Modules, one job each: `inputs` (which paths are inputs), `scan` (walk and hash in parallel),
`digest` (combine file hashes), `stamp` (stamp file format and atomic I/O), `decision` (the pure
stamp decision), `align` (set mtimes), `lock` (one exclusive lock per cache folder), `artifacts`
(newest artifact mtime, clearing derived outputs), `local` (sync a checkout into a tool-owned
copy), `progress` (progress bar), `session` (the whole sequence), `cli` (the subcommands).
"""

from buildtool.cache.errors import CacheError

__all__ = ["CacheError"]
