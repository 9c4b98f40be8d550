"""Is the engine enforcing structured output? One tiny constrained request tells (pure parts).

Forced tool choices, JSON response formats and structural tags rely on the engine's guided
decoding. An engine started so that it does not apply it (vLLM with `--reasoning-parser`
applies it only after the model writes the end of its reasoning) answers such requests with
free text: a 200 without `tool_calls`. So before the first constrained request is served (and
when the engine first answers `/health`), the sidecar asks the engine for a JSON string that
only one value satisfies. Anything else in the answer means the constraint was not applied,
and the sidecar refuses constrained requests with a message naming the engine flag to change
(docs/sidecar.md, "The engine's side").
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sidecar.engines import ENGINES
from sidecar.engines.base import EngineRequest
from sidecar.request import Sampling

PROBE_VALUE = "sidecar-forge-probe"
# A JSON string with one allowed value: a few tokens in any tokenizer, and text no model
# writes unconstrained after the probe prompt.
PROBE_SCHEMA = {"type": "string", "enum": [PROBE_VALUE]}
PROBE_PROMPT = "Answer:"
PROBE_MAX_TOKENS = 32
# A failed or inconclusive check is repeated no sooner than this (an engine restarted with
# the right flags is then found without restarting the sidecar).
RECHECK_SECONDS = 30.0

# Per engine: how to start it so the sidecar's constraints are enforced.
FIXES = {name: adapter.enforcement_fix for name, adapter in ENGINES.items()}


def probe_request(model: str) -> EngineRequest:
    return EngineRequest(
        model=model,
        prompt=PROBE_PROMPT,
        sampling=Sampling(max_tokens=PROBE_MAX_TOKENS, temperature=0.0),
        stream=False,
        guided_json=PROBE_SCHEMA,
    )


def enforced(text: str) -> bool:
    """Whether the probe's answer is the one value its schema allows."""
    try:
        return bool(json.loads(text) == PROBE_VALUE)
    except ValueError:
        return False


def misconfigured_message(engine: str, text: str) -> str:
    """What the sidecar says when the engine did not apply the probe's constraint."""
    shown = text if len(text) <= 80 else text[:80] + "..."
    return (
        "the engine does not enforce structured output (asked for the JSON string "
        f'"{PROBE_VALUE}", it answered {shown!r}); forced tool choices, JSON response '
        f"formats and structural tags are refused until it does. {FIXES[engine]}"
    )


@dataclass
class Enforcement:
    """The check's state in one sidecar process (not frozen: it is the check's memory)."""

    state: str = "unknown"  # unknown | enforced | not_enforced | inconclusive
    message: str | None = None  # why constrained requests are refused (not_enforced)
    checked_at: float = 0.0  # monotonic time of the last check

    def due(self, now: float) -> bool:
        """Whether a constrained request (or a healthy `/health`) should check first."""
        if self.state == "enforced":
            return False
        return self.state == "unknown" or now - self.checked_at >= RECHECK_SECONDS

    def record(self, now: float, engine: str, text: str | None) -> None:
        """The probe's answer (`None`: the probe failed, nothing learnt)."""
        self.checked_at = now
        if text is None:
            if self.state == "unknown":
                self.state = "inconclusive"
            return
        if enforced(text):
            self.state, self.message = "enforced", None
        else:
            self.state, self.message = "not_enforced", misconfigured_message(engine, text)
