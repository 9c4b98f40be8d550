"""`buildtool images build --push REGISTRY/PREFIX`: publish the images and their layer cache.

Each image is tagged twice, `REGISTRY/PREFIX/sidecar-NAME:<--tag>` and by its content,
`…:c<first 16 hex of the sha256 of its file manifest>` (the manifest is reproducible, so two
machines that build the same source give the same content tag, whatever the layer digests). The
base image goes along as `REGISTRY/PREFIX/base:<its tag>`, and its digest is printed: another
machine names it with `--base-image REGISTRY/PREFIX/base@sha256:…` (pulled, since pinned).

The layer cache travels with the images: the built-in BuildKit client builds with
`BUILDKIT_INLINE_CACHE=1` (cache metadata in the image config), buildx exports
`--cache-to type=registry,ref=REGISTRY/PREFIX/sidecar-NAME:buildcache,mode=max`. With the
built-in client the stages that other stages copy from are pushed too, as
`REGISTRY/PREFIX/buildcache:STAGE-TAG` (see `build.CACHE_STAGES`). A second machine passes
`--cache-from-pushed REGISTRY/PREFIX:TAG`, which names all of them (see docs/images.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from buildtool.images import manifest
from buildtool.images.build import ImageResult, stage_cache_tag
from buildtool.images.daemon import Daemon, split_reference
from buildtool.images.ui import Reporter

# host[:port] then at least one lowercase path component; no tag, no digest
_PREFIX = re.compile(r"^[a-zA-Z0-9.-]+(:\d+)?(/[a-z0-9]+(?:[._-][a-z0-9]+)*)+$")


class PushError(RuntimeError):
    """A push the registry refused, or a bad --push prefix; the message names which."""


@dataclass(frozen=True)
class Pushed:
    target: str
    refs: tuple[str, ...]
    digest: str  # the registry's manifest digest of the pushed image


def check_prefix(prefix: str) -> str:
    """`127.0.0.1:5000/sidecar-forge` or `ghcr.io/owner/repo`: a registry host and a path.

    The host must look like one (a dot, a port or `localhost`): a bare `owner/name` would be
    Docker Hub's, a namespace this project does not own."""
    cleaned = prefix.rstrip("/")
    host = cleaned.split("/")[0]
    looks_like_host = "." in host or ":" in host or host == "localhost"
    if not _PREFIX.match(cleaned) or not looks_like_host:
        raise PushError(
            f"--push {prefix!r}: expected REGISTRY/PREFIX, e.g. 127.0.0.1:5000/sidecar-forge "
            "or ghcr.io/OWNER/NAME (a registry host, then a lowercase path; no tag)"
        )
    return cleaned


def content_tag(entries: Sequence[manifest.ManifestEntry]) -> str:
    digest = hashlib.sha256("".join(e.line() + "\n" for e in entries).encode()).hexdigest()
    return "c" + digest[:16]


def cache_ref(prefix: str, target: str) -> str:
    return f"{prefix}/{target}:buildcache"


def push_ref(daemon: Daemon, source: str, ref: str) -> str:
    """Tag local image `source` as `ref`, push it, return the registry's digest."""
    repository, tag = split_reference(ref)
    daemon.sdk.images.get(source).tag(repository, tag)
    digest = ""
    for event in daemon.sdk.api.push(repository, tag=tag, stream=True, decode=True):
        if "error" in event:
            raise PushError(f"pushing {ref} failed: {event['error']}")
        aux = event.get("aux") or {}
        if aux.get("Digest"):
            digest = str(aux["Digest"])
    if not digest:
        raise PushError(f"pushing {ref}: the registry reported no digest")
    return digest


def push_all(
    daemon: Daemon,
    images: Sequence[ImageResult],
    stages: Sequence[ImageResult],
    prefix: str,
    tag: str,
    base_image: str,
    report: Reporter,
    record: Path,
) -> tuple[str, list[Pushed]]:
    """Push the base and every image; write what was pushed to `record` (JSON)."""
    _, base_tag = split_reference(base_image)
    base_tag = base_tag if not base_tag.startswith("sha256:") else "pinned"
    base_ref = f"{prefix}/base:{base_tag}"
    base_digest = push_ref(daemon, base_image, base_ref)
    base_pinned = f"{prefix}/base@{base_digest}"
    report.line(f"pushed {base_ref} ({base_digest}); on other machines: --base-image {base_pinned}")
    pushed = []
    for image in images:
        entries = manifest.of_image(daemon.sdk, image.tag)
        refs = (f"{prefix}/{image.target}:{tag}", f"{prefix}/{image.target}:{content_tag(entries)}")
        digest = ""
        for ref in refs:
            digest = push_ref(daemon, image.tag, ref)
        report.line(f"pushed {refs[0]} and :{refs[1].rsplit(':', 1)[1]} ({digest})")
        pushed.append(Pushed(image.target, refs, digest))
    caches = []
    for stage in stages:
        ref = stage_cache_tag(prefix, stage.target, tag)
        push_ref(daemon, stage.tag, ref)
        caches.append(ref)
    if caches:
        report.line(f"pushed the cache of {len(caches)} copied-from stages ({prefix}/buildcache)")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps(
            {
                "base": base_pinned,
                "cache_from_pushed": f"{prefix}:{tag}",
                "stage_caches": caches,
                "images": {p.target: {"refs": list(p.refs), "digest": p.digest} for p in pushed},
            },
            indent=2,
        )
        + "\n"
    )
    return base_pinned, pushed
