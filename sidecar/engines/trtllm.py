"""TensorRT-LLM `trtllm-serve`: OpenAI `POST /v1/completions` (strict: unknown fields are 400s)."""

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


class TRTLLMAdapter(EngineAdapter):
    kind: ClassVar[str] = "trtllm"
    generate_path: ClassVar[str] = "/v1/completions"

    def build_body(self, request: EngineRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "prompt": request.prompt,
            "stream": request.stream,
            "add_special_tokens": False,
            "skip_special_tokens": False,
            **sampling_fields(request.sampling, _SAMPLING),
        }
        if request.stream:  # trtllm-serve rejects stream_options on non-streamed requests
            body["stream_options"] = {"include_usage": True}
        if request.guided_json is not None:
            # trtllm-serve maps response_format {"type": "json", "schema"} to guided decoding.
            body["response_format"] = {"type": "json", "schema": request.guided_json}
        return body

    def decoder(self) -> StreamDecoder:
        return CompletionsDecoder()
