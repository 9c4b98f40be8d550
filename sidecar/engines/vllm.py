"""vLLM: OpenAI `POST /v1/completions` with the rendered prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from sidecar.engines.base import CompletionsAdapter


class VLLMAdapter(CompletionsAdapter):
    kind: ClassVar[str] = "vllm"

    def __init__(self, *, legacy_guided_json: bool = False) -> None:
        # vLLM < 0.11 takes `guided_json`; newer releases take `structured_outputs.json`.
        self.legacy_guided_json = legacy_guided_json

    def guided_fields(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        if self.legacy_guided_json:
            return {"guided_json": schema}
        return {"structured_outputs": {"json": schema}}
