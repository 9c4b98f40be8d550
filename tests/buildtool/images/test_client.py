"""Choosing a BuildKit client: buildx first, then a client with BuildKit built in."""

from __future__ import annotations

import os

import pytest

from buildtool.images import client as bk


def test_buildx_is_preferred_on_any_candidate() -> None:
    probes = [bk.Probe("/a/docker", False, True), bk.Probe("/b/docker", True, False)]
    chosen = bk.choose_client(probes)
    assert chosen is not None
    assert chosen.kind == "buildx" and chosen.argv_prefix == ("/b/docker", "buildx", "build")
    assert chosen.supports_builder and chosen.supports_cache_to


def test_builtin_client_gets_docker_buildkit_1() -> None:
    chosen = bk.choose_client(
        [bk.Probe("/new/docker", False, False), bk.Probe("/usr/bin/docker", False, True)]
    )
    assert chosen is not None and chosen.kind == "builtin"
    assert chosen.argv_prefix == ("/usr/bin/docker", "build")
    assert dict(chosen.env) == {"DOCKER_BUILDKIT": "1"}
    assert "DOCKER_BUILDKIT=1 /usr/bin/docker build" in chosen.describe()
    assert not chosen.supports_cache_to


def test_no_client_names_what_was_tried() -> None:
    def refuse(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        return 1, "ERROR: BuildKit is enabled but the buildx component is missing or broken."

    with pytest.raises(bk.NoBuildkitClient, match="tried"):
        bk.find_client({"PATH": os.environ.get("PATH", "")}, run=refuse)


def test_probe_reads_secret_flag_only_from_a_buildkit_build_help() -> None:
    calls: list[tuple[list[str], str | None]] = []

    def run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        calls.append((argv, env.get("DOCKER_BUILDKIT")))
        if argv[1] == "buildx":
            return 1, "docker: 'buildx' is not a docker command."
        return 0, "Usage: docker build\n      --secret stringArray   Secret file"

    probe = bk.probe("/usr/bin/docker", {"PATH": "/usr/bin"}, run=run)
    assert probe == bk.Probe("/usr/bin/docker", has_buildx=False, has_builtin_buildkit=True)
    assert calls[1] == (["/usr/bin/docker", "build", "--help"], "1")


@pytest.mark.skipif(not os.access("/usr/bin/docker", os.X_OK), reason="no /usr/bin/docker here")
def test_real_clients_on_this_machine() -> None:
    """The real binaries: whatever is found must be able to run a BuildKit build."""
    found = bk.find_client({"PATH": os.environ.get("PATH", "")})
    real = bk.probe(found.binary, {"PATH": os.environ.get("PATH", "")})
    assert real.has_buildx or real.has_builtin_buildkit
    if found.kind == "builtin":
        assert found.argv_prefix[1] == "build"
