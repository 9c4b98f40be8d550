"""Driving BuildKit: the command line for each target, running it, reading what it did."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from buildtool.images import plainlog
from buildtool.images.client import BuildkitClient
from buildtool.images.targets import BUILDER_STAGE, TARGETS, image_tag
from buildtool.images.ui import Reporter


@dataclass(frozen=True)
class BuildOptions:
    """Everything one `buildtool images build` run needs, read once from the command line."""

    workspace: Path
    context_dir: Path
    log_dir: Path
    targets: tuple[str, ...]
    base_image: str
    tag_prefix: str
    tag: str
    platform: str | None = None
    builder: str | None = None
    cache_from: tuple[str, ...] = ()
    cache_to: tuple[str, ...] = ()
    no_cache: bool = False
    allow_pull: bool = True  # a digest-pinned base image only; nothing else is ever pulled
    debian_mirror: str | None = None  # for debootstrap, when the base image is made
    push: str | None = None  # REGISTRY/PREFIX to push the images and their layer cache to
    labels: tuple[str, ...] = ()  # KEY=VALUE image labels (OCI annotations in CI)
    cache_from_pushed: str | None = None  # REGISTRY/PREFIX:TAG that `--push` made: reuse it


@dataclass(frozen=True)
class ImageResult:
    target: str
    tag: str
    seconds: float
    size_bytes: int | None
    cached: int
    total: int
    steps: tuple[plainlog.Step, ...]
    log_path: Path


class BuildError(RuntimeError):
    """A build option the client cannot honour, or a failed build (message says which step)."""


def check_options(client: BuildkitClient, options: BuildOptions) -> None:
    """Options only buildx understands are refused up front, naming the option."""
    if options.builder and not client.supports_builder:
        raise BuildError(
            f"--builder {options.builder} needs the buildx plugin; the client found is "
            f"{client.describe()}"
        )
    if options.cache_to and not client.supports_cache_to:
        raise BuildError(
            f"--cache-to needs the buildx plugin; the client found is {client.describe()}"
        )
    for label in options.labels:
        if "=" not in label or not label.split("=", 1)[0]:
            raise BuildError(f"--label {label!r}: expected KEY=VALUE")
    if options.platform and "," in options.platform and client.kind != "buildx":
        raise BuildError(
            f"--platform {options.platform}: several platforms in one build need buildx"
        )


def check_base_visible(driver: str | None, base_image: str) -> None:
    """A buildx builder other than the daemon's own (`docker-container`, `remote`, ...) cannot
    see the daemon's local images: BuildKit would resolve an unpinned FROM name on a registry
    (Docker Hub for `sidecar-forge/base:…`, a name this project does not own). Refuse that."""
    from buildtool.images.base import pinned_by_digest

    if driver is not None and driver != "docker" and not pinned_by_digest(base_image):
        raise BuildError(
            f"the buildx builder (driver {driver}) cannot see local images, so it would pull "
            f"{base_image} from a registry by its tag: push the base image to a registry you "
            "own and pass --base-image REGISTRY/NAME@sha256:... (see docs/images.md)"
        )


# Stages whose results a later stage copies (`COPY --from`). The built-in client's inline cache
# holds only the layers of the image it is built into, and BuildKit decides a `COPY --from` by
# the copied files' content, which needs the source stage's result: so `--push` also pushes
# each of these stages, with its own inline cache, and `--cache-from-pushed` names them too.
CACHE_STAGES: tuple[str, ...] = ("helper-tests", BUILDER_STAGE)


def stage_cache_tag(prefix: str, stage: str, tag: str) -> str:
    """`PREFIX/buildcache:build-wheel-TAG`: where a copied-from stage's cache image goes."""
    return f"{prefix}/buildcache:{stage}-{tag}"


def stages_for(targets: Sequence[str]) -> tuple[str, ...]:
    """The copied-from stages the given sidecar targets need: every target copies the one
    builder's output, which waits for the helper's tests."""
    return CACHE_STAGES if targets else ()


def pushed_cache_sources(client: BuildkitClient, pushed: str) -> list[str]:
    """`--cache-from` sources for what `--push PREFIX --tag TAG` published (`PREFIX:TAG`)."""
    prefix, _, tag = pushed.rpartition(":")
    if not prefix or "/" in tag or not tag:
        raise BuildError(f"--cache-from-pushed {pushed!r}: expected REGISTRY/PREFIX:TAG")
    if client.kind == "buildx":
        return [f"type=registry,ref={prefix}/{t}:buildcache" for t in TARGETS]
    return [f"{prefix}/{t}:{tag}" for t in TARGETS] + [
        stage_cache_tag(prefix, s, tag) for s in CACHE_STAGES
    ]


def build_argv(
    client: BuildkitClient, options: BuildOptions, target: str, tag: str | None = None
) -> list[str]:
    """The BuildKit command for one target (pure); `tag`: the full image name to give it."""
    argv = [*client.argv_prefix, "--progress=plain", "--target", target]
    argv += ["--tag", tag or image_tag(target, options.tag_prefix, options.tag)]
    argv += ["--file", str(options.context_dir / "Dockerfile")]
    argv += ["--build-arg", f"BASE_IMAGE={options.base_image}"]
    if options.platform:
        argv += ["--platform", options.platform]
    if options.builder:
        argv += ["--builder", options.builder]
    for source in options.cache_from:
        argv += ["--cache-from", source]
    if options.cache_from_pushed:
        for source in pushed_cache_sources(client, options.cache_from_pushed):
            argv += ["--cache-from", source]
    for dest in options.cache_to:
        argv += ["--cache-to", dest]
    if options.push:
        # the layer cache goes with the images: inline (in the image config) for the built-in
        # builder, a registry cache image with buildx
        if client.kind == "buildx":
            ref = f"{options.push}/{target}:buildcache"
            argv += ["--cache-to", f"type=registry,ref={ref},mode=max"]
        else:
            argv += ["--build-arg", "BUILDKIT_INLINE_CACHE=1"]
    for label in options.labels:
        argv += ["--label", label]
    if options.no_cache:
        argv.append("--no-cache")
    if client.kind == "buildx":
        # a docker-container builder keeps results to itself unless told to load them
        argv.append("--load")
    argv.append(str(options.context_dir))
    return argv


def run_build(
    argv: Sequence[str], env: dict[str, str], log_path: Path, label: str, report: Reporter
) -> tuple[int, list[plainlog.Step]]:
    """Run one build, log everything to `log_path`, show the current step on the live status."""
    progress = plainlog.PlainProgress()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        log_path.open("w") as log,
        subprocess.Popen(
            list(argv),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            bufsize=1,
        ) as proc,
    ):
        assert proc.stdout is not None
        log.write("$ " + " ".join(argv) + "\n")
        finished: set[int] = set()
        for line in proc.stdout:
            log.write(line)
            step = progress.feed(line)
            if step is None or not step.is_instruction:
                continue
            if step.status == "running":
                report.status(f"{label}: [{step.stage}] {(step.instruction or '')[:70]}")
            elif step.number not in finished:
                finished.add(step.number)
                report.progress(step_line(label, step))
        rc = proc.wait()
    return rc, progress.steps


def step_line(label: str, step: plainlog.Step) -> str:
    """`sidecar-vllm: [python-base 2/2] RUN ...: cached` (or `done 3.1 s`, `FAILED`)."""
    outcome = {
        "cached": "cached",
        "done": f"done {step.seconds or 0.0:.1f} s",
        "error": "FAILED",
        "canceled": "canceled",
    }.get(step.status, step.status)
    return f"{label}: {_clip(step.name, 90)}: {outcome}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_message(target: str, steps: Sequence[plainlog.Step], log_path: Path, rc: int) -> str:
    """The failing step (clipped), BuildKit's error, that step's last output lines, the log path."""
    failed = [s for s in steps if s.status == "error"]
    if not failed:
        return f"building {target} failed (exit status {rc}); full log: {log_path}"
    step = failed[0]
    tail = "\n".join(f"    {line}" for line in step.output[-30:] if line.strip())
    return (
        f"building {target} failed at {_clip(step.name, 100)}\n"
        f"  {_clip(step.error or '', 300)}\n{tail}\n  full log: {log_path}"
    )


def build_one(
    client: BuildkitClient,
    options: BuildOptions,
    target: str,
    env: dict[str, str],
    report: Reporter,
    tag: str | None = None,
) -> ImageResult:
    argv = build_argv(client, options, target, tag)
    log_path = options.log_dir / f"{target}.log"
    start = time.monotonic()
    rc, steps = run_build(argv, env, log_path, target, report)
    seconds = time.monotonic() - start
    if rc != 0:
        raise BuildError(failure_message(target, steps, log_path, rc))
    counts = plainlog.cache_counts(steps)
    return ImageResult(
        target=target,
        tag=tag or image_tag(target, options.tag_prefix, options.tag),
        seconds=seconds,
        size_bytes=None,
        cached=counts.cached,
        total=counts.total,
        steps=tuple(steps),
        log_path=log_path,
    )


def build_env(client: BuildkitClient, base_env: dict[str, str]) -> dict[str, str]:
    env = {**base_env, **dict(client.env)}
    env.setdefault("PATH", os.defpath)
    return env
