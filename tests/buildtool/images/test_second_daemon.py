"""One machine builds and pushes, another reuses: a real registry and a second Docker daemon.

The first daemon builds with `--push 127.0.0.1:PORT/sidecar-forge` (Debian's docker-registry,
started here on loopback). A second dockerd (own data root and socket, an empty store, its own
bridge) then builds the same source twice:
- cold, with nothing but the base image, pulled by the digest the push printed: its images hold
  the same files as the first daemon's (builds on two daemons are reproducible);
- after emptying its store again, with `--cache-from-pushed` (the pushed images and the cache
  images of the stages they copy from): every Dockerfile step is CACHED (none whose inputs did
  not change is rebuilt; no wheel is built) and the files are again the same.
The time ratio (goal <= 0.3x cold) is a speed figure: `nox -s bench` prints it
(benchmarks/bench_images.py); here the two times are only printed.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemons import (
    Registry,
    SecondDaemon,
    buildtool_images,
    missing_tools,
    remove_tags_under,
)
from images_support import ROOT, build_log_steps, copy_workspace

from buildtool.images import manifest, plainlog
from buildtool.images.artifact import MARKER
from buildtool.images.build import CACHE_STAGES, stage_cache_tag
from buildtool.images.daemon import Daemon, connect
from buildtool.images.push import content_tag
from buildtool.images.targets import TARGETS, image_tag

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def machines(daemon: Daemon) -> Iterator[tuple[Registry, SecondDaemon]]:
    missing = missing_tools()
    if missing:
        message = f"needs {', '.join(missing)}: run scripts/setup-registry-test.sh"
        if os.environ.get("SIDECAR_FORGE_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with Registry() as registry, SecondDaemon() as second:
        yield registry, second


def manifests(daemon: Daemon, tag: str) -> dict[str, list[manifest.ManifestEntry]]:
    return {t: manifest.of_image(daemon.sdk, image_tag(t, tag=tag)) for t in TARGETS}


def test_second_daemon_builds_from_the_pushed_cache(
    daemon: Daemon, machines: tuple[Registry, SecondDaemon], tmp_path: Path
) -> None:
    registry, second = machines
    prefix = f"{registry.address}/sidecar-forge"
    tag = "push-" + secrets.token_hex(3)
    try:
        buildtool_images(ROOT, "--push", prefix, "--tag", tag)
        pushed = json.loads((ROOT / ".reports" / "images" / "pushed.json").read_text())
        ours = manifests(daemon, tag)
    finally:
        local = [image_tag(t, tag=tag) for t in TARGETS]
        local += [stage_cache_tag("sidecar-forge", s, tag) for s in CACHE_STAGES]
        for name in local:
            if daemon.image_exists(name):
                daemon.sdk.images.remove(name, force=True)
        remove_tags_under(None, registry.address)
    base = pushed["base"]
    assert pushed["cache_from_pushed"] == f"{prefix}:{tag}"
    assert len(pushed["stage_caches"]) == len(CACHE_STAGES)
    assert base.startswith(f"{prefix}/base@sha256:")
    for target in TARGETS:
        refs = pushed["images"][target]["refs"]
        assert refs == [
            f"{prefix}/{target}:{tag}",
            f"{prefix}/{target}:{content_tag(ours[target])}",
        ]

    workspace = copy_workspace(tmp_path / "machine-b")
    common = ("--base-image", base, "--context-dir", str(tmp_path / "context-b"))
    other = connect(second.host, {})
    assert other is not None
    try:
        cold_s, _ = buildtool_images(workspace, *common, "--tag", "cold", docker_host=second.host)
        theirs_cold = manifests(other, "cold")
        second.reset()
        warm_s, warm = buildtool_images(
            workspace,
            *common,
            "--tag",
            "warm",
            "--cache-from-pushed",
            pushed["cache_from_pushed"],
            docker_host=second.host,
        )
        theirs_warm = manifests(other, "warm")
    finally:
        other.close()
    print(f"second daemon: cold {cold_s:.1f} s, with --cache-from {warm_s:.1f} s")

    for target in TARGETS:
        steps = build_log_steps(workspace, target)
        counts = plainlog.cache_counts(steps)
        ran = [s.name for s in steps if s.is_instruction and s.status != "cached"]
        print(f"{target}: {counts.cached}/{counts.total} steps cached from the registry")
        assert ran == [] and counts.total > 0, ran
        log = (workspace / ".reports" / "images" / f"{target}.log").read_text()
        assert MARKER not in log  # no wheel was built
        for name, theirs in (("cold", theirs_cold), ("warm", theirs_warm)):
            differing = manifest.differences(ours[target], theirs[target])
            compared = f"{len(ours[target])} entries"
            print(f"{target} ({name}) vs first daemon: {compared}, {len(differing)} differ")
            assert differing == [], "\n".join(differing[:20])
    assert "pushed" not in warm.stderr  # only the first machine pushed
