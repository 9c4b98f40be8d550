"""vLLM: OpenAI `POST /v1/completions` with the rendered prompt."""

from __future__ import annotations

from typing import Any, ClassVar

from sidecar.engines.base import (
    CompletionsDecoder,
    EngineAdapter,
    EngineRequest,
    StreamDecoder,
    sampling_fields,
)

_SAMPLING = {
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "repetition_penalty": "repetition_penalty",
}


class VLLMAdapter(EngineAdapter):
    kind: ClassVar[str] = "vllm"
    generate_path: ClassVar[str] = "/v1/completions"

    def __init__(self, *, legacy_guided_json: bool = False) -> None:
        # vLLM < 0.11 takes `guided_json`; newer releases take `structured_outputs.json`.
        self.legacy_guided_json = legacy_guided_json

    def build_body(self, request: EngineRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "prompt": request.prompt,
            "stream": request.stream,
            # The sidecar's template already wrote BOS and special tokens.
            "add_special_tokens": False,
            "skip_special_tokens": False,  # parsers need the markup tokens in the text
            **sampling_fields(request.sampling, _SAMPLING),
        }
        if request.stream:
            body["stream_options"] = {"include_usage": True}
        if request.guided_json is not None:
            if self.legacy_guided_json:
                body["guided_json"] = request.guided_json
            else:
                body["structured_outputs"] = {"json": request.guided_json}
        return body

    def decoder(self) -> StreamDecoder:
        return CompletionsDecoder()
