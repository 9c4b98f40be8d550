"""Names shared by the Dockerfile, the build driver and the tests."""

from __future__ import annotations

SIDECARS: tuple[str, ...] = ("vllm", "sglang", "trtllm")
TARGETS: tuple[str, ...] = tuple(f"sidecar-{name}" for name in SIDECARS)

DEFAULT_BASE_IMAGE = "sidecar-forge/base:bookworm-slim"
DEFAULT_TAG_PREFIX = "sidecar-forge"
DEFAULT_TAG = "dev"
# Port the sidecar listens on inside each image (its default; EXPOSE and HEALTHCHECK use it).
CONTAINER_PORT = 8080
# The one builder stage: it builds the wheel every runtime target copies its files from.
BUILDER_STAGE = "build-wheel"
# The builder's BuildKit cache mount, one per architecture (docs/images.md).
CACHE_ID_TEMPLATE = "sidecar-forge-${TARGETARCH}-inputs-v3"


def image_tag(target: str, prefix: str = DEFAULT_TAG_PREFIX, tag: str = DEFAULT_TAG) -> str:
    """`sidecar-vllm` -> `sidecar-forge/sidecar-vllm:dev`."""
    return f"{prefix}/{target}:{tag}"


def parse_targets(names: list[str] | None) -> tuple[str, ...]:
    """Accept `vllm` or `sidecar-vllm`; no names means all three. Unknown names are an error."""
    if not names:
        return TARGETS
    chosen: list[str] = []
    for raw in names:
        name = raw if raw.startswith("sidecar-") else f"sidecar-{raw}"
        if name not in TARGETS:
            raise ValueError(f"unknown image target {raw!r}: choose from {', '.join(TARGETS)}")
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)
