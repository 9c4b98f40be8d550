"""`buildtool images ...`: build the sidecar images, or only provision their inputs.

buildtool images build [TARGET ...] [--platform P] [--builder B] [--cache-from S]...
                       [--cache-to D]... [--base-image NAME] [--tag T] [--no-cache]
buildtool images base [--base-image NAME]        # provision the base image only
buildtool images wheelhouse [--platform P]       # prepare ./wheelhouse only
buildtool images manifest IMAGE                  # path, kind, mode, owner, sha256 per entry
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from buildtool.images.targets import DEFAULT_BASE_IMAGE, DEFAULT_TAG, DEFAULT_TAG_PREFIX, TARGETS

if TYPE_CHECKING:
    from buildtool.images import job

# The heavy modules (Docker SDK, rich) are imported inside the commands: every `buildtool`
# invocation builds this parser, including `buildtool cache-build` in each image build step.

EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    images = subparsers.add_parser(
        "images",
        help="build the sidecar images (BuildKit)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = images.add_subparsers(dest="images_command", required=True)

    b = sub.add_parser("build", help="build the sidecar images and print a summary")
    b.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help=f"images to build (default all: {', '.join(TARGETS)}; `vllm` works too)",
    )
    _common(b)
    b.add_argument("--platform", help="BuildKit --platform, e.g. linux/arm64")
    b.add_argument("--builder", help="buildx builder instance (remote or docker-container)")
    b.add_argument(
        "--cache-from",
        action="append",
        default=[],
        metavar="SOURCE",
        help="BuildKit --cache-from (repeatable), e.g. type=registry,ref=...",
    )
    b.add_argument(
        "--cache-to",
        action="append",
        default=[],
        metavar="DEST",
        help="BuildKit --cache-to (repeatable; buildx only), e.g. type=gha,mode=max",
    )
    b.add_argument(
        "--push",
        metavar="REGISTRY/PREFIX",
        help="push each image as PREFIX/sidecar-NAME:TAG and :c<content hash>, with its layer "
        "cache, and the base image as PREFIX/base (its digest is printed)",
    )
    b.add_argument(
        "--cache-from-pushed",
        metavar="REGISTRY/PREFIX:TAG",
        help="reuse the layer cache another machine published with --push REGISTRY/PREFIX "
        "--tag TAG (adds the --cache-from sources it needs)",
    )
    b.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="image label (repeatable), e.g. org.opencontainers.image.revision=SHA",
    )
    b.add_argument("--tag", default=DEFAULT_TAG, help=f"image tag (default {DEFAULT_TAG})")
    b.add_argument(
        "--tag-prefix",
        default=DEFAULT_TAG_PREFIX,
        help=f"image repository prefix (default {DEFAULT_TAG_PREFIX})",
    )
    b.add_argument("--no-cache", action="store_true", help="BuildKit --no-cache")
    b.add_argument(
        "--no-pull",
        action="store_true",
        help="never pull, not even a digest-pinned --base-image",
    )
    b.add_argument(
        "--context-dir",
        type=Path,
        help="the tool-owned build context copy (default under the user cache)",
    )
    b.add_argument(
        "--python-version",
        help="Python of the base image for the wheelhouse (default: ask the image)",
    )
    b.set_defaults(func=cmd_build)

    p = sub.add_parser("base", help="provision the base image only (reuse, pull or debootstrap)")
    _common(p)
    p.add_argument(
        "--no-pull", action="store_true", help="never pull, not even a digest-pinned base"
    )
    p.set_defaults(func=cmd_base)

    m = sub.add_parser(
        "manifest",
        help="print an image's file manifest (path, kind, mode, owner, sha256), sorted",
        description=(
            "One tab-separated line per entry of the image's file system: kind, mode, uid:gid, "
            "sha256 of the content (or of a symlink's target), path. Diff two manifests to "
            "compare builds or releases. Left out: /etc/hosts, /etc/hostname, "
            "/etc/resolv.conf, /etc/mtab (the daemon writes them into every container)."
        ),
    )
    m.add_argument("image", metavar="IMAGE", help="a local image (name, tag or id)")
    m.set_defaults(func=cmd_manifest)

    w = sub.add_parser("wheelhouse", help="prepare the hash-pinned ./wheelhouse only")
    _common(w)
    w.add_argument("--platform", default="linux/amd64", help="platforms, comma separated")
    w.add_argument("--python-version", default="3.11", help="the image's Python (default 3.11)")
    w.set_defaults(func=cmd_wheelhouse)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workspace",
        type=Path,
        default=Path.cwd(),
        help="the checkout holding the Dockerfile (default: current folder)",
    )
    p.add_argument(
        "--base-image",
        default=DEFAULT_BASE_IMAGE,
        help=(
            f"FROM image with python3 (default {DEFAULT_BASE_IMAGE}, made locally). Pulled only "
            "when pinned by digest (NAME@sha256:...); otherwise used if present, else made "
            "with debootstrap"
        ),
    )
    p.add_argument(
        "--debian-mirror",
        metavar="URL",
        help="Debian mirror for debootstrap when the base image is made (default: debootstrap's)",
    )


def _workspace(args: argparse.Namespace) -> Path:
    workspace = Path(args.workspace).resolve()
    if not (workspace / "Dockerfile").is_file():
        raise SystemExit(f"buildtool images: --workspace {workspace} has no Dockerfile")
    return workspace


def options_from_args(args: argparse.Namespace, environ: dict[str, str]) -> job.JobOptions:
    from buildtool.images import job
    from buildtool.images.build import BuildOptions
    from buildtool.images.context import default_context_dir, default_local_cache
    from buildtool.images.push import check_prefix
    from buildtool.images.targets import parse_targets

    workspace = _workspace(args)
    push = check_prefix(args.push) if args.push else None
    cache_home = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    context_dir = args.context_dir or default_context_dir(workspace, cache_home)
    build = BuildOptions(
        workspace=workspace,
        context_dir=Path(context_dir).resolve(),
        log_dir=workspace / ".reports" / "images",
        targets=parse_targets(args.targets),
        base_image=args.base_image,
        tag_prefix=args.tag_prefix,
        tag=args.tag,
        platform=args.platform,
        builder=args.builder,
        cache_from=tuple(args.cache_from),
        cache_to=tuple(args.cache_to),
        no_cache=args.no_cache,
        allow_pull=not args.no_pull,
        debian_mirror=args.debian_mirror,
        push=push,
        labels=tuple(args.label),
        cache_from_pushed=args.cache_from_pushed,
    )
    return job.JobOptions(
        build=build,
        environ=tuple(sorted(environ.items())),
        python_version=args.python_version,
        local_cache=default_local_cache(workspace, cache_home),
    )


def cmd_build(args: argparse.Namespace) -> int:
    from buildtool.images import base, client, job, wheelhouse
    from buildtool.images.build import BuildError
    from buildtool.images.local import LocalBuildError
    from buildtool.images.push import PushError
    from buildtool.images.ui import ConsoleReporter

    try:
        options = options_from_args(args, dict(os.environ))
    except (ValueError, PushError) as exc:
        print(f"buildtool images build: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with ConsoleReporter() as report:
        try:
            result = job.run(options, report)
        except (BuildError, LocalBuildError, PushError) as exc:
            report.done()
            print(f"buildtool images build: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except (client.NoBuildkitClient, base.BaseImageError, wheelhouse.WheelhouseError) as exc:
            report.done()
            print(f"buildtool images build: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print_summary(result)
    return 0


def print_summary(result: job.JobResult) -> None:
    from rich.console import Console
    from rich.table import Table

    from buildtool.images import job

    out = Console(highlight=False)
    if result.mode == "local":
        out.print("built locally (no Docker daemon reachable; no images were made):")
        for wheel in result.local_artifacts:
            out.print(f"  {wheel}", markup=False, emoji=False, soft_wrap=True)
        return
    table = Table(title="images", title_justify="left")
    for column in ("image", "size", "time", "steps cached"):
        table.add_column(column, justify="left" if column == "image" else "right")
    for row in job.summary_rows(result.images):
        table.add_row(*row)
    out.print(table)


def cmd_base(args: argparse.Namespace) -> int:
    from buildtool.images import base, client
    from buildtool.images.daemon import connect
    from buildtool.images.ui import ConsoleReporter

    daemon = connect(None, dict(os.environ))
    if daemon is None:
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        print(
            f"buildtool images base: no Docker daemon reachable at {where}; start one with "
            "scripts/setup-host.sh",
            file=sys.stderr,
        )
        return EXIT_USAGE
    with ConsoleReporter() as report:
        try:
            found = client.find_client(dict(os.environ))
            spec = base.BaseImageSpec(
                name=args.base_image, allow_pull=not args.no_pull, mirror=args.debian_mirror
            )
            action = base.ensure_base_image(daemon, found.binary, spec, report)
        except (client.NoBuildkitClient, base.BaseImageError) as exc:
            report.done()
            print(f"buildtool images base: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print(f"{args.base_image}: {action.value}")
    return 0


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    from buildtool.images import job, wheelhouse
    from buildtool.images.ui import ConsoleReporter

    workspace = _workspace(args)
    spec = wheelhouse.WheelhouseSpec(
        directory=workspace / "wheelhouse",
        pyproject=workspace / "pyproject.toml",
        constraints=workspace / "constraints.txt",
        platforms=job.platforms_for(args.platform, "amd64"),
        python_version=args.python_version,
    )
    with ConsoleReporter() as report:
        try:
            wheelhouse.prepare(spec, report)
        except wheelhouse.WheelhouseError as exc:
            report.done()
            print(f"buildtool images wheelhouse: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    import docker.errors

    from buildtool.images import manifest
    from buildtool.images.daemon import connect

    daemon = connect(None, dict(os.environ))
    if daemon is None:
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        print(f"buildtool images manifest: no Docker daemon reachable at {where}", file=sys.stderr)
        return EXIT_USAGE
    try:
        entries = manifest.of_image(daemon.sdk, args.image)
    except docker.errors.ImageNotFound:
        print(f"buildtool images manifest: no local image {args.image}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        daemon.close()
    sys.stdout.write("".join(entry.line() + "\n" for entry in entries))
    files = sum(1 for e in entries if e.kind in "fh")
    print(f"{args.image}: {len(entries)} entries, {files} files", file=sys.stderr)
    return 0
