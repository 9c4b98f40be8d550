"""TensorRT-LLM `trtllm-serve`: OpenAI `POST /v1/completions` (strict: unknown fields are 400s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from sidecar.engines.base import CompletionsAdapter


class TRTLLMAdapter(CompletionsAdapter):
    kind: ClassVar[str] = "trtllm"
    enforcement_fix: ClassVar[str] = (
        "trtllm-serve applies guided decoding only with guided_decoding_backend: xgrammar in "
        "its --extra_llm_api_options file"
    )

    def guided_fields(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        # trtllm-serve maps response_format {"type": "json", "schema"} to guided decoding.
        return {"response_format": {"type": "json", "schema": schema}}
