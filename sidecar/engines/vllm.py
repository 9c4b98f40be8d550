"""vLLM: OpenAI `POST /v1/completions` with the rendered prompt."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from sidecar.engines.base import CompletionsAdapter


class VLLMAdapter(CompletionsAdapter):
    kind: ClassVar[str] = "vllm"
    enforcement_fix: ClassVar[str] = (
        "vLLM started with --reasoning-parser applies structured output only after the model "
        "ends its reasoning: start vLLM without --reasoning-parser (the sidecar parses "
        'reasoning itself), or with --structured-outputs-config \'{"enable_in_reasoning": '
        "true}' (and keep its guided-decoding backend, xgrammar by default, available)"
    )

    def __init__(self, *, legacy_guided_json: bool = False) -> None:
        # vLLM < 0.11 takes `guided_json`; newer releases take `structured_outputs.json`.
        self.legacy_guided_json = legacy_guided_json

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--vllm-guided-json",
            action="store_true",
            help="vLLM only: send the legacy `guided_json` field (vLLM < 0.11) "
            "instead of `structured_outputs`",
        )

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        return cls(legacy_guided_json=args.vllm_guided_json)

    @property
    def forced_mode(self) -> Literal["structural-tag", "guided-json"]:
        # the legacy field set has no structural tag on /v1/completions
        return "guided-json" if self.legacy_guided_json else "structural-tag"

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
