"""vLLM: OpenAI `POST /v1/completions` with the rendered prompt."""

from __future__ import annotations

import json
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

    def structural_tag_fields(self, tag: Mapping[str, Any]) -> dict[str, Any]:
        # `structured_outputs.structural_tag` is a JSON string (vLLM >= 0.11.1). vLLM 0.11.0
        # silently ignores a structural tag in `response_format` on /v1/completions; older
        # releases (`legacy_guided_json`) keep the field they had.
        if self.legacy_guided_json:
            return super().structural_tag_fields(tag)
        text = json.dumps({**tag, "type": "structural_tag"}, ensure_ascii=False)
        return {"structured_outputs": {"structural_tag": text}}
