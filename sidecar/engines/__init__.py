"""Engine adapters: each one speaks one engine's own generation API.

`ENGINES` is the registry: the command line (`sidecar ENGINE`, the `sidecar-ENGINE` scripts,
each engine's own options) and the enforcement messages are derived from it. Adding an engine:
docs/sidecar.md, "Adding an engine".
"""

from __future__ import annotations

from sidecar.engines.base import EngineAdapter, EngineEvent, EngineRequest, StreamDecoder, Usage
from sidecar.engines.sglang import SGLangAdapter
from sidecar.engines.trtllm import TRTLLMAdapter
from sidecar.engines.vllm import VLLMAdapter

ENGINES: dict[str, type[EngineAdapter]] = {
    "vllm": VLLMAdapter,
    "sglang": SGLangAdapter,
    "trtllm": TRTLLMAdapter,
}

__all__ = [
    "ENGINES",
    "EngineAdapter",
    "EngineEvent",
    "EngineRequest",
    "SGLangAdapter",
    "StreamDecoder",
    "TRTLLMAdapter",
    "Usage",
    "VLLMAdapter",
]
