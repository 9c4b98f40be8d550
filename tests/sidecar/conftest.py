from __future__ import annotations

from collections.abc import Iterator

import pytest
from sidecar_harness import KINDS, Deployment, deploy

from sidecar.server import DEFAULT_FRONT, FRONTS

# Every engine kind behind the default HTTP front, and vLLM's behind each other front too:
# the front does not depend on the engine, so every HTTP test runs on both fronts once.
SETUPS = [(kind, DEFAULT_FRONT) for kind in KINDS] + [
    ("vllm", front) for front in FRONTS if front != DEFAULT_FRONT
]


@pytest.fixture(scope="module", params=SETUPS, ids=[f"{k}-{f}" for k, f in SETUPS])
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """A fake engine of each kind, with sidecars in front started on demand."""
    kind, front = request.param
    yield from deploy(kind, front=front)
