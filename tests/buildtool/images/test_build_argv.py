"""The BuildKit command line for each client kind, and options only buildx honours."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from buildtool.images.build import BuildError, BuildOptions, build_argv, check_options
from buildtool.images.client import BuildkitClient
from buildtool.images.job import platforms_for

BUILTIN = BuildkitClient(
    "builtin", "/usr/bin/docker", ("/usr/bin/docker", "build"), (("DOCKER_BUILDKIT", "1"),)
)
BUILDX = BuildkitClient(
    "buildx", "/usr/local/bin/docker", ("/usr/local/bin/docker", "buildx", "build"), ()
)


def options(**changes: object) -> BuildOptions:
    base = BuildOptions(
        workspace=Path("/ws"),
        context_dir=Path("/ctx"),
        log_dir=Path("/logs"),
        targets=("sidecar-vllm",),
        base_image="sidecar-forge/base:bookworm",
        tag_prefix="sidecar-forge",
        tag="dev",
    )
    return BuildOptions(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def test_builtin_argv_builds_the_synced_context_with_plain_progress() -> None:
    argv = build_argv(BUILTIN, options(), "sidecar-vllm")
    assert argv[:2] == ["/usr/bin/docker", "build"]
    assert "--progress=plain" in argv
    assert argv[argv.index("--target") + 1] == "sidecar-vllm"
    assert argv[argv.index("--tag") + 1] == "sidecar-forge/sidecar-vllm:dev"
    assert argv[argv.index("--file") + 1] == "/ctx/Dockerfile"
    assert argv[argv.index("--build-arg") + 1] == "BASE_IMAGE=sidecar-forge/base:bookworm"
    assert argv[-1] == "/ctx" and "--load" not in argv


def test_buildkit_options_are_passed_through_to_buildx() -> None:
    opts = options(
        platform="linux/arm64",
        builder="remote",
        cache_from=("type=gha,scope=vllm", "type=local,src=/c"),
        cache_to=("type=gha,mode=max,scope=vllm",),
        no_cache=True,
    )
    check_options(BUILDX, opts)
    argv = build_argv(BUILDX, opts, "sidecar-vllm")
    assert argv[:3] == ["/usr/local/bin/docker", "buildx", "build"]
    pairs = list(itertools.pairwise(argv))
    assert ("--platform", "linux/arm64") in pairs
    assert ("--builder", "remote") in pairs
    assert ("--cache-from", "type=gha,scope=vllm") in pairs
    assert ("--cache-from", "type=local,src=/c") in pairs
    assert ("--cache-to", "type=gha,mode=max,scope=vllm") in pairs
    assert "--no-cache" in argv and "--load" in argv


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"builder": "remote"}, "--builder remote"),
        ({"cache_to": ("type=gha",)}, "--cache-to"),
        ({"platform": "linux/amd64,linux/arm64"}, "--platform"),
    ],
)
def test_buildx_only_options_refused_with_builtin_client(
    change: dict[str, object], named: str
) -> None:
    with pytest.raises(BuildError, match=named):
        check_options(BUILTIN, options(**change))


def test_cache_from_is_fine_with_builtin_client() -> None:
    check_options(BUILTIN, options(cache_from=("sidecar-forge/sidecar-vllm:cache",)))


def test_wheelhouse_platforms() -> None:
    assert platforms_for("linux/arm64", "x86_64") == ("linux/arm64",)
    assert platforms_for("linux/amd64, linux/arm64", "x86_64") == ("linux/amd64", "linux/arm64")
    # no --platform: a remote builder may be of the other architecture, so both
    assert platforms_for(None, "x86_64") == ("linux/amd64", "linux/arm64")
    assert platforms_for(None, "aarch64") == ("linux/amd64", "linux/arm64")
