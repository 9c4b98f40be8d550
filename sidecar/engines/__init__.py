"""Engine adapters: each one speaks one engine's own generation API."""

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
