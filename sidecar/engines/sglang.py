"""SGLang native `POST /generate`: `text` + `sampling_params`; cumulative or incremental text."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from sidecar.engines.base import (
    EngineAdapter,
    EngineEvent,
    EngineRequest,
    StreamDecoder,
    malformed,
    sampling_fields,
    usage_of,
)
from sidecar.errors import EngineError

OutputMode = Literal["auto", "cumulative", "incremental"]

_SAMPLING = {
    "max_tokens": "max_new_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "seed": "sampling_seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "repetition_penalty": "repetition_penalty",
}


def _finish(meta: Mapping[str, Any]) -> tuple[str | None, str | int | None]:
    reason = meta.get("finish_reason")
    if reason is None:
        return None, None
    if not isinstance(reason, Mapping):
        raise malformed("'meta_info.finish_reason' is not an object")
    kind = reason.get("type")
    if kind == "length":
        return "length", None
    if kind == "stop":
        matched = reason.get("matched")
        return "stop", matched if isinstance(matched, str | int) else None
    if kind == "abort":
        raise EngineError(
            502, f"engine aborted the request: {reason.get('message', '')}", "engine_aborted"
        )
    raise malformed(f"unknown finish_reason type {kind!r}")


class SGLangDecoder(StreamDecoder):
    """Turns each event's `text` into a delta.

    SGLang streams the whole text so far unless the server runs with
    `--incremental-streaming-output`. `auto` decides on the first event that tells them
    apart (a later text that does not extend the earlier one is incremental) and keeps
    that decision for the rest of the stream.
    """

    def __init__(self, mode: OutputMode) -> None:
        self.mode: OutputMode = mode
        self.seen = ""  # all text received so far (the cumulative view)
        self.events = 0

    def decode(self, payload: Any) -> EngineEvent:
        if not isinstance(payload, Mapping):
            raise malformed("event is not a JSON object")
        if "error" in payload and "text" not in payload:
            raise EngineError(502, f"engine reported an error: {payload['error']}", "engine_error")
        text = payload.get("text")
        meta = payload.get("meta_info")
        if not isinstance(text, str) or not isinstance(meta, Mapping):
            raise malformed("'text' or 'meta_info' missing")
        finish, matched = _finish(meta)
        delta = self._delta(text)
        self.events += 1
        usage = None
        if finish is not None:
            usage = usage_of(meta.get("prompt_tokens"), meta.get("completion_tokens"))
        return EngineEvent(text=delta, finish_reason=finish, stop_reason=matched, usage=usage)

    def _delta(self, text: str) -> str:
        if self.mode == "auto" and self.seen and text:
            self.mode = "cumulative" if text.startswith(self.seen) else "incremental"
        if self.mode == "cumulative" or (self.mode == "auto" and not self.seen):
            if not text.startswith(self.seen):
                raise malformed("cumulative 'text' does not extend the text streamed so far")
            delta = text[len(self.seen) :]
            self.seen = text
            return delta
        self.seen += text
        return text


class SGLangAdapter(EngineAdapter):
    kind: ClassVar[str] = "sglang"
    generate_path: ClassVar[str] = "/generate"
    enforcement_fix: ClassVar[str] = (
        "SGLang started with --reasoning-parser applies the grammar only after the model ends "
        "its reasoning, and --grammar-backend none applies none: start SGLang without "
        "--reasoning-parser and with a grammar backend (xgrammar by default)"
    )

    def __init__(self, *, output_mode: OutputMode = "auto") -> None:
        self.output_mode: OutputMode = output_mode

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--sglang-output",
            choices=("auto", "cumulative", "incremental"),
            default="auto",
            help="SGLang only: how the engine streams `text` (default: detect)",
        )

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        return cls(output_mode=args.sglang_output)

    def build_body(self, request: EngineRequest) -> dict[str, Any]:
        params = sampling_fields(request.sampling, _SAMPLING)
        params["skip_special_tokens"] = False  # parsers need the markup tokens in the text
        if request.guided_json is not None:
            params["json_schema"] = json.dumps(request.guided_json, ensure_ascii=False)
        elif request.structural_tag is not None:  # SGLang takes it as a JSON string
            tag = {**request.structural_tag, "type": "structural_tag"}
            params["structural_tag"] = json.dumps(tag, ensure_ascii=False)
        return {"text": request.prompt, "sampling_params": params, "stream": request.stream}

    def decoder(self) -> StreamDecoder:
        return SGLangDecoder(self.output_mode)

    def decode_response(self, payload: Any) -> EngineEvent:
        return SGLangDecoder("cumulative").decode(payload)
