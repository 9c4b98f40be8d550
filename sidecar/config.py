"""The sidecar's configuration: built once at startup by the CLI, frozen, passed down."""

from __future__ import annotations

from dataclasses import dataclass, field

from parsers.settings import ParserSettings
from sidecar.structural import ForcedChoice

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_HEAD_TIMEOUT = 5.0  # seconds for a request's head, from its first byte
DEFAULT_BODY_TIMEOUT = 30.0  # seconds for a request's body, from the head's end


@dataclass(frozen=True)
class Timeouts:
    connect: float = 5.0
    read: float = 300.0  # longest silence allowed between two engine events
    health: float = 2.0


@dataclass(frozen=True)
class SidecarConfig:
    engine: str  # "vllm" | "sglang" | "trtllm"
    engine_url: str
    model: str
    settings: ParserSettings
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    timeouts: Timeouts = field(default_factory=Timeouts)
    # Names clients use for the model (`/v1/models`, responses); empty: `model` alone.
    served_model_names: tuple[str, ...] = ()
    api_key: str | None = None  # bearer token clients must send on /v1/*
    engine_api_key: str | None = None  # bearer token sent to the engine
    engine_ca_bundle: str | None = None  # CA certificates trusted for an https engine
    # How forced tool choices are constrained: structural tag (and for which grammar
    # version) or guided JSON (docs/sidecar.md, "Forced tool choices").
    forced_choice: ForcedChoice = field(default_factory=ForcedChoice)

    @property
    def served_names(self) -> tuple[str, ...]:
        return self.served_model_names or (self.model,)
