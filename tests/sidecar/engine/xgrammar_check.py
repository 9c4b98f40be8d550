"""Compile structural tags with the real xgrammar and match texts against them.

Run with the engine venv's Python (xgrammar needs torch; this project is not installed
there). `--version`: the xgrammar version. Otherwise JSON on stdin,
`[{"tag": {...}, "texts": ["...", ...]}, ...]`; JSON on stdout, one
`{"compiled": bool, "error": str | null, "accepted": [bool, ...]}` per case. A text is
accepted when the matcher takes all of it and the grammar is then complete.

Only xgrammar's public API: a byte-level vocabulary (every text is expressible), the
compiler's `compile_structural_tag`, `GrammarMatcher.accept_string` / `is_terminated`.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(_version())
        return
    import xgrammar

    cases: list[dict[str, Any]] = json.load(sys.stdin)
    info = xgrammar.TokenizerInfo([bytes([i]) for i in range(256)])
    compiler = xgrammar.GrammarCompiler(info, max_threads=1)
    out = []
    for case in cases:
        try:
            compiled = compiler.compile_structural_tag(json.dumps(case["tag"]))
        except Exception as exc:  # the error is the result
            out.append({"compiled": False, "error": f"{type(exc).__name__}: {exc}", "accepted": []})
            continue
        accepted = []
        for text in case["texts"]:
            matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
            accepted.append(bool(matcher.accept_string(text) and matcher.is_terminated()))
        out.append({"compiled": True, "error": None, "accepted": accepted})
    json.dump({"xgrammar": _version(), "results": out}, sys.stdout)


def _version() -> str:
    from importlib.metadata import version

    return version("xgrammar")


if __name__ == "__main__":
    main()
