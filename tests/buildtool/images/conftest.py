"""Image tests: real Docker daemon, real BuildKit. Slow, so they run in `nox -s images`.

Tests marked `docker` here are skipped unless SIDECAR_FORGE_IMAGE_TESTS=1 (the `images` session
sets it; `nox -s test` runs three times and leaves them out). With no daemon reachable they skip
with the reason, unless SIDECAR_FORGE_REQUIRE_DOCKER=1 (CI), where that is a failure.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from images_support import ROOT, build_images, selected_targets

from buildtool.images.daemon import Daemon, connect
from buildtool.images.targets import image_tag

HERE = Path(__file__).resolve().parent
OPT_IN = "SIDECAR_FORGE_IMAGE_TESTS"
REQUIRE = "SIDECAR_FORGE_REQUIRE_DOCKER"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(OPT_IN) == "1":
        return
    skip = pytest.mark.skip(
        reason=f"image builds and smoke tests are slow: they run in `nox -s images` ({OPT_IN}=1)"
    )
    for item in items:
        if "docker" in item.keywords and HERE in Path(str(item.path)).parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    found = connect(None, dict(os.environ))
    if found is None:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        message = (
            f"no Docker daemon reachable at {where}: start one with scripts/setup-host.sh "
            "(dockerd), or point DOCKER_HOST at one"
        )
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 but {message}")
        pytest.skip(message)
    yield found
    found.close()


@pytest.fixture(scope="session")
def sidecar_images(daemon: Daemon) -> dict[str, str]:
    """The images of this checkout (`buildtool images build`; cached after `nox -s build`).

    CI builds one sidecar per job: SIDECAR_FORGE_IMAGE_TARGETS (comma-separated, e.g. `vllm`)
    picks which, SIDECAR_FORGE_IMAGE_BUILD_ARGS adds build options (the job's base image by
    digest, its cache), so the fixture rebuilds nothing the job's `nox -s build` built."""
    targets = selected_targets()
    extra = shlex.split(os.environ.get("SIDECAR_FORGE_IMAGE_BUILD_ARGS", ""))
    build_images(ROOT, *targets, *extra)
    tags = {target: image_tag(target) for target in targets}
    for tag in tags.values():
        assert daemon.image_exists(tag), tag
    return tags
