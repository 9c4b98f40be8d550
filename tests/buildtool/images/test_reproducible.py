"""Reproducible, slim images on the real daemon.

- Two `--no-cache` builds of each image give identical file manifests (path, kind, mode, owner,
  sha256 of content or link target); only the daemon's runtime-injected files are left out.
- Each image is at most 150 MB and the three share every layer but their last.
Both print what they measured (run with -s, or read the report's captured output).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from images_support import ROOT, build_images

from buildtool.images import manifest
from buildtool.images.daemon import Daemon
from buildtool.images.targets import TARGETS, image_tag

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SIZE_GOAL = 150 * 10**6
PREFIX = "sidecar-forge-test"


@pytest.fixture
def two_tags(daemon: Daemon) -> Iterator[tuple[str, str]]:
    tags = ("repro-a-" + secrets.token_hex(3), "repro-b-" + secrets.token_hex(3))
    yield tags
    for tag in tags:
        for target in TARGETS:
            name = image_tag(target, PREFIX, tag)
            if daemon.image_exists(name):
                daemon.sdk.images.remove(name, force=True)


def test_two_clean_builds_give_identical_files(daemon: Daemon, two_tags: tuple[str, str]) -> None:
    for tag in two_tags:
        build_images(ROOT, "--no-cache", "--tag-prefix", PREFIX, "--tag", tag)
    for target in TARGETS:
        first, second = (
            manifest.of_image(daemon.sdk, image_tag(target, PREFIX, tag)) for tag in two_tags
        )
        differing = manifest.differences(first, second)
        files = sum(1 for e in first if e.kind in "fh")
        print(f"{target}: {len(first)} entries ({files} files) compared, {len(differing)} differ")
        assert files > 1000  # the whole file system was read, not an empty export
        assert differing == [], "\n".join(differing[:20])


def test_images_are_slim_and_share_all_but_their_last_layer(
    daemon: Daemon, sidecar_images: dict[str, str]
) -> None:
    layers = {}
    for target, tag in sidecar_images.items():
        attrs = daemon.sdk.images.get(tag).attrs
        layers[target] = list(attrs["RootFS"]["Layers"])
        size = int(attrs["Size"])
        print(f"{tag}: {size / 1e6:.1f} MB, {len(layers[target])} layers")
        assert size <= SIZE_GOAL, f"{tag} is {size / 1e6:.1f} MB (goal <= {SIZE_GOAL / 1e6:.0f})"
    first, *others = layers.values()
    for other in others:
        assert other[:-1] == first[:-1]  # base, venv, user: one copy on disk and on the wire
        assert len(other) == len(first)


def test_runtime_venv_holds_only_runtime_dependencies(
    daemon: Daemon, sidecar_images: dict[str, str]
) -> None:
    code = (
        "import importlib.metadata as m; "
        "print(' '.join(sorted(d.metadata['Name'].lower() for d in m.distributions())))"
    )
    out = daemon.sdk.containers.run(
        sidecar_images["sidecar-vllm"], ["-c", code], entrypoint="python3", remove=True
    )
    installed = set(bytes(out).decode().split())
    for unwanted in (
        "pip",
        "setuptools",
        "wheel",
        "pygments",
        "rich",
        "docker",
        "requests",
        "httpx",
        "blake3",
        "pytest",
    ):
        assert unwanted not in installed, installed
    assert {"starlette", "uvicorn", "httptools", "jinja2", "sidecar-forge"} <= installed
    # the project's own build tool is in its wheel, but not in the images
    found = daemon.sdk.containers.run(
        sidecar_images["sidecar-vllm"],
        [
            "-c",
            "import importlib.util as u; print(u.find_spec('buildtool'), u.find_spec('sidecar'))",
        ],
        entrypoint="python3",
        remove=True,
    )
    tool, sidecar = bytes(found).decode().split(" ", 1)
    assert tool == "None" and sidecar != "None"
    # the base: no manuals, translations or docs (each package's copyright file stays)
    script = (
        "find /usr/share/man /usr/share/locale /usr/share/info -mindepth 1 | wc -l; "
        "find /usr/share/doc -type f ! -name copyright | wc -l; "
        "find /usr/share/doc -name copyright | wc -l"
    )
    listing = daemon.sdk.containers.run(
        sidecar_images["sidecar-vllm"], ["-c", script], entrypoint="sh", remove=True
    )
    manuals, docs, copyrights = (int(n) for n in bytes(listing).decode().split())
    assert (manuals, docs) == (0, 0) and copyrights > 10
