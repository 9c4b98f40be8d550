"""`--push`, `--cache-from-pushed`, labels and the buildx base guard: the pure parts.

The real registry and second daemon are in test_second_daemon.py (`nox -s images`).
"""

from __future__ import annotations

import pytest
from images_support import ROOT
from test_build_argv import BUILDX, BUILTIN, options

from buildtool.images import client as bk
from buildtool.images import manifest, push
from buildtool.images.build import (
    CACHE_STAGES,
    BuildError,
    build_argv,
    check_base_visible,
    check_options,
    pushed_cache_sources,
    stages_for,
)

PINNED = "127.0.0.1:5000/sf/base@sha256:" + "ab" * 32


def values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_push_adds_the_layer_cache_for_each_client_kind() -> None:
    builtin = build_argv(BUILTIN, options(push="127.0.0.1:5000/sf"), "sidecar-vllm")
    assert "BUILDKIT_INLINE_CACHE=1" in values(builtin, "--build-arg")
    assert values(builtin, "--cache-to") == []
    buildx = build_argv(BUILDX, options(push="127.0.0.1:5000/sf"), "sidecar-vllm")
    assert values(buildx, "--cache-to") == [
        "type=registry,ref=127.0.0.1:5000/sf/sidecar-vllm:buildcache,mode=max"
    ]
    assert "BUILDKIT_INLINE_CACHE=1" not in values(buildx, "--build-arg")
    plain = build_argv(BUILTIN, options(), "sidecar-vllm")
    assert "BUILDKIT_INLINE_CACHE=1" not in values(plain, "--build-arg")


def test_cache_from_pushed_names_every_image_and_copied_from_stage() -> None:
    sources = pushed_cache_sources(BUILTIN, "127.0.0.1:5000/sf:v1")
    assert sources[:3] == [
        f"127.0.0.1:5000/sf/sidecar-{n}:v1" for n in ("vllm", "sglang", "trtllm")
    ]
    assert sources[3:] == [f"127.0.0.1:5000/sf/buildcache:{s}-v1" for s in CACHE_STAGES]
    argv = build_argv(BUILTIN, options(cache_from_pushed="127.0.0.1:5000/sf:v1"), "sidecar-vllm")
    assert values(argv, "--cache-from") == sources
    assert pushed_cache_sources(BUILDX, "r.example/sf:v1") == [
        f"type=registry,ref=r.example/sf/sidecar-{n}:buildcache"
        for n in ("vllm", "sglang", "trtllm")
    ]
    with pytest.raises(BuildError, match="REGISTRY/PREFIX:TAG"):
        pushed_cache_sources(BUILTIN, "127.0.0.1:5000/sf")


def test_stages_pushed_with_a_target_are_the_ones_it_copies_from() -> None:
    assert stages_for(("sidecar-sglang",)) == ("helper-tests", "build-wheel")
    assert stages_for(("sidecar-vllm", "sidecar-trtllm")) == ("helper-tests", "build-wheel")
    assert stages_for(()) == ()
    text = (ROOT / "Dockerfile").read_text()
    for stage in CACHE_STAGES:
        assert f"COPY --from={stage} " in text  # each is really copied from


def test_push_prefix_must_name_a_registry_host() -> None:
    assert push.check_prefix("127.0.0.1:5000/sidecar-forge/") == "127.0.0.1:5000/sidecar-forge"
    assert push.check_prefix("ghcr.io/owner/repo") == "ghcr.io/owner/repo"
    assert push.check_prefix("localhost/x") == "localhost/x"
    for bad in (
        "sidecar-forge",
        "owner/name",
        "ghcr.io/Owner/Repo",
        "r.example/x:tag",
        "r.example",
    ):
        with pytest.raises(push.PushError, match="REGISTRY/PREFIX"):
            push.check_prefix(bad)


def test_content_tag_follows_the_files() -> None:
    a = [manifest.ManifestEntry("/x", "f", 0o644, 0, 0, "00" * 32)]
    b = [manifest.ManifestEntry("/x", "f", 0o755, 0, 0, "00" * 32)]
    assert push.content_tag(a) == push.content_tag(list(a))
    assert push.content_tag(a) != push.content_tag(b)
    assert push.content_tag(a).startswith("c") and len(push.content_tag(a)) == 17


def test_labels_are_passed_and_checked() -> None:
    argv = build_argv(
        BUILTIN, options(labels=("org.opencontainers.image.revision=abc",)), "sidecar-vllm"
    )
    assert values(argv, "--label") == ["org.opencontainers.image.revision=abc"]
    with pytest.raises(BuildError, match="KEY=VALUE"):
        check_options(BUILTIN, options(labels=("novalue",)))


def test_a_builder_that_cannot_see_local_images_needs_a_pinned_base() -> None:
    check_base_visible(None, "sidecar-forge/base:bookworm-slim")  # the built-in client
    check_base_visible("docker", "sidecar-forge/base:bookworm-slim")  # the daemon's own
    check_base_visible("docker-container", PINNED)
    with pytest.raises(BuildError, match="by its tag"):
        check_base_visible("docker-container", "sidecar-forge/base:bookworm-slim")


def test_builder_driver_is_read_from_buildx_inspect() -> None:
    answers = {
        ("/usr/local/bin/docker", "buildx", "inspect"): (0, "Name: b\nDriver: docker-container\n"),
        ("/usr/local/bin/docker", "buildx", "inspect", "remote"): (0, "Driver:   remote\n"),
    }

    def run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        return answers.get(tuple(argv), (1, "no such builder"))

    assert bk.builder_driver(BUILDX, None, {}, run) == "docker-container"
    assert bk.builder_driver(BUILDX, "remote", {}, run) == "remote"
    assert bk.builder_driver(BUILDX, "gone", {}, run) is None
    assert bk.builder_driver(BUILTIN, None, {}, run) is None
