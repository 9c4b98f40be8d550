"""What every engine adapter provides: request bodies out, typed events in (no I/O here)."""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from sidecar.errors import EngineError
from sidecar.request import Sampling


@dataclass(frozen=True)
class EngineRequest:
    model: str
    prompt: str
    sampling: Sampling
    stream: bool
    guided_json: Mapping[str, Any] | None = None  # JSON schema the output must follow
    # A structural tag the output must follow (its JSON object), when no guided JSON is asked.
    structural_tag: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass(frozen=True)
class EngineEvent:
    text: str = ""  # newly generated text (a delta, whatever the engine sent)
    finish_reason: str | None = None  # "stop" | "length" once the engine is done
    stop_reason: str | int | None = None  # the stop string / token that ended generation
    usage: Usage | None = None


def malformed(what: str) -> EngineError:
    return EngineError(502, f"engine sent a malformed response: {what}", "engine_protocol_error")


class StreamDecoder(ABC):
    """Per-stream state: one decoded SSE `data:` JSON payload in, one event out."""

    @abstractmethod
    def decode(self, payload: Any) -> EngineEvent: ...


class EngineAdapter(ABC):
    """One engine: its name in `sidecar.engines.ENGINES`, its API, its own options."""

    kind: ClassVar[str]
    generate_path: ClassVar[str]
    health_path: ClassVar[str] = "/health"
    # How to start the engine so it applies guided decoding: said when the sidecar's probe
    # finds a constraint ignored (sidecar.enforcement).
    enforcement_fix: ClassVar[str]

    @classmethod  # noqa: B027 (an optional hook: most engines have no options)
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The engine's own command-line options, named `--KIND-...` (none by default)."""

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        """The adapter for a parsed command line (by default it takes no options)."""
        return cls()

    @property
    def forced_mode(self) -> Literal["structural-tag", "guided-json"]:
        """How tool_choice required / named is constrained when --forced-tool-choice is not
        given: a structural tag unless the engine's API cannot take one."""
        return "structural-tag"

    @abstractmethod
    def build_body(self, request: EngineRequest) -> dict[str, Any]: ...

    @abstractmethod
    def decoder(self) -> StreamDecoder: ...

    def decode_response(self, payload: Any) -> EngineEvent:
        """A non-streamed response body is decoded like a single stream event."""
        return self.decoder().decode(payload)


def finish_from_openai(reason: Any) -> str | None:
    """OpenAI-style completion finish reasons (vLLM, TRT-LLM); engine aborts are errors."""
    if reason is None:
        return None
    if reason in ("stop", "length"):
        return str(reason)
    if reason == "abort":
        raise EngineError(502, "engine aborted the request", "engine_aborted")
    if isinstance(reason, str):
        return "stop"  # other engine-specific reasons end the text like a stop
    raise malformed(f"finish_reason {reason!r}")


def _stop_reason(value: Any) -> str | int | None:
    """vLLM's stop string or token id; anything else is not passed on to the client."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


# A token count past 32 bits is no count an engine made (context lengths are millions), and
# a total of two such counts still fits any client's int64; the counters stay exact.
_MAX_COUNT = 2**31 - 1


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _MAX_COUNT


def usage_of(prompt: Any, completion: Any) -> Usage | None:
    """The engine's token counts, if both are counts (non-negative integers within 32 bits);
    anything else is treated as no usage reported: the text is still the client's, and the
    token counters never take a negative, boolean or unbounded value."""
    if _count(prompt) and _count(completion):
        return Usage(prompt, completion)
    return None


def usage_from_openai(usage: Any) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None
    return usage_of(usage.get("prompt_tokens"), usage.get("completion_tokens"))


class CompletionsDecoder(StreamDecoder):
    """OpenAI `/v1/completions` payloads: `choices[0].text` deltas (vLLM, trtllm-serve)."""

    def decode(self, payload: Any) -> EngineEvent:
        if not isinstance(payload, Mapping):
            raise malformed("event is not a JSON object")
        if "error" in payload and "choices" not in payload:
            err = payload["error"]
            message = err.get("message") if isinstance(err, Mapping) else str(err)
            raise EngineError(502, f"engine reported an error: {message}", "engine_error")
        choices = payload.get("choices")
        if not isinstance(choices, list):
            raise malformed("'choices' missing")
        usage = usage_from_openai(payload.get("usage"))
        if not choices:  # the usage-only chunk of stream_options.include_usage
            return EngineEvent(usage=usage)
        choice = choices[0]
        text = choice.get("text") if isinstance(choice, Mapping) else None
        if not isinstance(text, str):
            raise malformed("'choices[0].text' missing")
        return EngineEvent(
            text=text,
            finish_reason=finish_from_openai(choice.get("finish_reason")),
            stop_reason=_stop_reason(choice.get("stop_reason")),
            usage=usage,
        )


def sampling_fields(s: Sampling, names: Mapping[str, str]) -> dict[str, Any]:
    """Sampling values that were set, renamed for the engine (`names`: ours -> theirs)."""
    out: dict[str, Any] = {}
    for ours, theirs in names.items():
        value = getattr(s, ours)
        if value is not None:
            out[theirs] = value
    if s.stop:
        out["stop"] = list(s.stop)
    return out


# Field names of both OpenAI-completions engines (vLLM and trtllm-serve take the same ones).
COMPLETIONS_SAMPLING = {
    name: name
    for name in (
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
    )
}


class CompletionsAdapter(EngineAdapter):
    """Engines serving OpenAI `POST /v1/completions` (vLLM, trtllm-serve); they differ only in
    where a forced tool choice's guided JSON goes."""

    generate_path: ClassVar[str] = "/v1/completions"

    def build_body(self, request: EngineRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "prompt": request.prompt,
            "stream": request.stream,
            # The sidecar's template already wrote BOS and special tokens.
            "add_special_tokens": False,
            "skip_special_tokens": False,  # parsers need the markup tokens in the text
            **sampling_fields(request.sampling, COMPLETIONS_SAMPLING),
        }
        if request.stream:  # trtllm-serve rejects stream_options on non-streamed requests
            body["stream_options"] = {"include_usage": True}
        if request.guided_json is not None:
            body.update(self.guided_fields(request.guided_json))
        elif request.structural_tag is not None:
            body.update(self.structural_tag_fields(request.structural_tag))
        return body

    @abstractmethod
    def guided_fields(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The engine's own request field(s) asking for output that follows `schema`."""

    def structural_tag_fields(self, tag: Mapping[str, Any]) -> dict[str, Any]:
        """The engine's own request field(s) asking for output that follows a structural tag.
        trtllm-serve takes `response_format: {"type": "structural_tag", "format": ...}` with
        nothing else in it (its models forbid unknown fields); a tag in the legacy
        `structures`/`triggers` spelling goes as written."""
        if "format" in tag:
            return {"response_format": {"type": "structural_tag", "format": tag["format"]}}
        return {"response_format": {**tag, "type": "structural_tag"}}

    def decoder(self) -> StreamDecoder:
        return CompletionsDecoder()
