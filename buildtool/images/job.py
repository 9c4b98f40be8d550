"""`buildtool images build` end to end: daemon, client, base image, wheelhouse, context, builds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from buildtool import fsutil
from buildtool.images import base, client, context, local, push, wheelhouse
from buildtool.images.build import (
    BuildOptions,
    ImageResult,
    build_env,
    build_one,
    check_base_visible,
    check_options,
    stage_cache_tag,
    stages_for,
)
from buildtool.images.daemon import Daemon, connect
from buildtool.images.ui import Reporter


@dataclass(frozen=True)
class JobOptions:
    build: BuildOptions
    environ: tuple[tuple[str, str], ...]  # the environment, read once by the CLI
    docker_host: str | None = None
    python_version: str | None = None  # the base image's Python; None: ask the image
    local_cache: Path | None = None  # local mode's cache folder (no daemon reachable)


@dataclass(frozen=True)
class JobResult:
    mode: str  # "buildkit" or "local"
    client: str | None
    images: tuple[ImageResult, ...]
    local_artifacts: tuple[Path, ...] = ()


# Without --platform the builder picks its own native platform, which need not be the local
# daemon's (a remote --builder on another architecture): cover both, it costs three wheels.
DEFAULT_WHEEL_PLATFORMS = ("linux/amd64", "linux/arm64")


def platforms_for(platform: str | None, daemon_arch: str) -> tuple[str, ...]:
    """The wheelhouse must cover every platform built."""
    if platform:
        return tuple(p.strip() for p in platform.split(",") if p.strip())
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(daemon_arch, daemon_arch)
    own = f"linux/{arch}"
    return DEFAULT_WHEEL_PLATFORMS if own in DEFAULT_WHEEL_PLATFORMS else (own,)


def base_python_version(daemon: Daemon, image: str) -> str:
    """`major.minor` of python3 in the base image (the wheelhouse must match it)."""
    out = daemon.sdk.containers.run(
        image,
        ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        remove=True,
        network_disabled=True,
    )
    return bytes(out).decode().strip()


def cached_python_version(daemon: Daemon, image: str, cache_dir: Path) -> str:
    """`base_python_version`, remembered per image id (asking starts a container: ~1 s)."""
    key = daemon.image_id(image).replace(":", "-")
    memo = cache_dir / key
    try:
        known = memo.read_text().strip()
    except OSError:
        known = ""
    if known:
        return known
    version = base_python_version(daemon, image)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # atomically: a memo torn by a kill would otherwise be trusted as the version
    fsutil.replace_file(memo, (version + "\n").encode())
    return version


def run(options: JobOptions, report: Reporter) -> JobResult:
    env = dict(options.environ)
    daemon = connect(options.docker_host, env)
    if daemon is None:
        return _run_local(options, report)
    try:
        return _run_buildkit(daemon, options, env, report)
    finally:
        daemon.close()


def _run_buildkit(
    daemon: Daemon, options: JobOptions, env: dict[str, str], report: Reporter
) -> JobResult:
    opts = options.build
    info = daemon.info
    report.line(f"daemon: Docker {info.version} (API {info.api_version}, {info.os}/{info.arch})")
    found = client.find_client(env)
    report.line(f"BuildKit client: {found.describe()}")
    check_options(found, opts)
    driver = client.builder_driver(found, opts.builder, env)
    if driver is not None:
        report.line(f"buildx builder driver: {driver}")
    check_base_visible(driver, opts.base_image)

    spec = base.BaseImageSpec(
        name=opts.base_image, allow_pull=opts.allow_pull, mirror=opts.debian_mirror
    )
    base.ensure_base_image(daemon, found.binary, spec, report)

    python = options.python_version or cached_python_version(
        daemon, opts.base_image, opts.context_dir.parent / "base-python"
    )
    wheel_spec = wheelhouse.WheelhouseSpec(
        directory=opts.workspace / "wheelhouse",
        pyproject=opts.workspace / "pyproject.toml",
        constraints=opts.workspace / "constraints.txt",
        platforms=platforms_for(opts.platform, info.arch),
        python_version=python,
    )
    with context.locked(opts.context_dir, report):
        wheelhouse.prepare(wheel_spec, report)
        synced = context.sync(opts.workspace, opts.context_dir)
        report.line(
            f"build context {opts.context_dir}: {synced.written} written, "
            f"{synced.removed} removed, {synced.unchanged} unchanged"
        )
        benv = build_env(found, env)
        results = []
        for target in opts.targets:
            report.line(f"building {target} ...")
            results.append(build_one(found, opts, target, benv, report))
        stage_results = []
        if opts.push and found.kind != "buildx":  # buildx exports every stage (mode=max)
            for stage in stages_for(opts.targets):
                local = stage_cache_tag(opts.tag_prefix, stage, opts.tag)
                report.line(f"building {stage} (its cache goes with --push) ...")
                stage_results.append(build_one(found, opts, stage, benv, report, tag=local))
    sized = tuple(replace(r, size_bytes=daemon.image_size(r.tag)) for r in results)
    if opts.push:
        push.push_all(
            daemon,
            sized,
            stage_results,
            opts.push,
            opts.tag,
            opts.base_image,
            report,
            opts.log_dir / "pushed.json",
        )
    return JobResult("buildkit", found.describe(), sized)


def _run_local(options: JobOptions, report: Reporter) -> JobResult:
    opts = options.build
    report.line(
        "daemon: no Docker daemon reachable; building the sidecars locally with the cache "
        "helper's local mode instead (no images)"
    )
    cache_root = options.local_cache or (opts.context_dir.parent / "local-builds")
    sidecars = [t.removeprefix("sidecar-") for t in opts.targets]
    wheels = local.build_all(opts.workspace, cache_root, sidecars, report)
    return JobResult("local", None, (), tuple(wheels))


def format_size(size: int | None) -> str:
    if size is None:
        return "?"
    return f"{size / 1e6:.0f} MB"


def summary_rows(images: Sequence[ImageResult]) -> list[tuple[str, str, str, str]]:
    return [
        (r.tag, format_size(r.size_bytes), f"{r.seconds:.1f} s", f"{r.cached}/{r.total}")
        for r in images
    ]
