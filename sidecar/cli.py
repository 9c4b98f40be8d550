"""Command line of the sidecars (placeholder until the sidecar lands)."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    raise SystemExit("sidecar: not implemented yet")


def main_vllm() -> int:
    return main(["vllm"])


def main_sglang() -> int:
    return main(["sglang"])


def main_trtllm() -> int:
    return main(["trtllm"])
