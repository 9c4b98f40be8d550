from __future__ import annotations

from collections.abc import Iterator

import pytest
from sidecar_harness import KINDS, Deployment, deploy


@pytest.fixture(scope="module", params=KINDS)
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """A fake engine of each kind, with sidecars in front started on demand."""
    yield from deploy(request.param)
