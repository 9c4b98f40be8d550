"""Base image provisioning: reuse a local image, pull one only when pinned by digest, else make it.

The default base, `sidecar-forge/base:bookworm-slim`, is made here (debootstrap and `docker import`)
and never pulled: the project owns no registry namespace of that name, so whoever registered it
on Docker Hub would otherwise supply the FROM image of every build. A user may name another base
by digest (`python:3.11-slim-bookworm@sha256:…`, or the same on a registry mirror they run): its
content is fixed by the digest, so pulling it is safe. A name without a digest is only ever used
when it exists locally, or made here when absent.

The made base is slim and as reproducible as debootstrap allows: docs (copyright files kept),
man and info pages, locales, logs, package caches and backup files are removed, the byte-code
of the system Python is recompiled in one pass with hash-based headers, and the dates debootstrap
writes (`/etc/shadow`'s last password change) are fixed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from buildtool.images.daemon import Daemon
from buildtool.images.ui import Reporter


class BaseAction(Enum):
    REUSE = "present"
    PULL = "pulled by digest"
    BOOTSTRAP = "bootstrapped with debootstrap"
    REFUSE = "refused"


@dataclass(frozen=True)
class BaseImageSpec:
    """How to make the base image when it has to be made."""

    name: str
    suite: str = "bookworm"
    variant: str = "minbase"
    # python3 alone: the Dockerfile makes its venvs `--without-pip` and runs pip from the
    # wheelhouse, so neither Debian's pip (and its setuptools, wheel, CA bundle) nor the
    # ensurepip wheels of python3-venv end up in the images.
    include: tuple[str, ...] = ("python3",)
    mirror: str | None = None
    allow_pull: bool = True  # a digest-pinned name may be pulled when absent
    # Removed from the root file system before import: documentation (copyright files kept),
    # manuals, translations, logs, package caches and dpkg/debconf/passwd backups.
    trim: tuple[str, ...] = (
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "usr/share/locale",
        "usr/share/lintian",
        "usr/share/common-licenses",
        "var/cache/apt",
        "var/lib/apt/lists",
        "var/log",
        "var/cache/ldconfig/aux-cache",
        "var/cache/debconf/config.dat-old",
        "var/cache/debconf/templates.dat-old",
        "var/lib/dpkg/status-old",
        "var/lib/dpkg/diversions-old",
        "etc/passwd-",
        "etc/group-",
        "etc/shadow-",
        "etc/gshadow-",
        "etc/machine-id",
    )


def pinned_by_digest(name: str) -> bool:
    """`repo@sha256:<64 hex>` (with or without a tag): its content cannot change."""
    _, sep, digest = name.rpartition("@")
    return bool(sep) and re.fullmatch(r"sha256:[0-9a-f]{64}", digest) is not None


class BaseImageError(RuntimeError):
    """Provisioning failed; the message names the step and what to do."""


def decide(present: bool, pinned: bool, allow_pull: bool) -> BaseAction:
    """Present: reuse. Absent and pinned by digest: pull (unless told not to; then refuse, since
    nothing made here can have that digest). Absent and not pinned: make it, never pull a tag."""
    if present:
        return BaseAction.REUSE
    if pinned:
        return BaseAction.PULL if allow_pull else BaseAction.REFUSE
    return BaseAction.BOOTSTRAP


def debootstrap_argv(spec: BaseImageSpec, root: Path) -> list[str]:
    argv = ["debootstrap", f"--variant={spec.variant}"]
    if spec.include:
        argv.append(f"--include={','.join(spec.include)}")
    argv += [spec.suite, str(root)]
    if spec.mirror:
        argv.append(spec.mirror)
    return argv


def import_changes() -> list[str]:
    """`docker import --change` lines: a usable PATH and a default command."""
    return [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        'CMD ["python3"]',
    ]


def ensure_base_image(
    daemon: Daemon, docker_binary: str, spec: BaseImageSpec, report: Reporter
) -> BaseAction:
    """Make sure `spec.name` exists locally; says what it did through `report`."""
    present = daemon.image_exists(spec.name)
    action = decide(present, pinned_by_digest(spec.name), spec.allow_pull)
    if action is BaseAction.REUSE:
        report.line(f"base image {spec.name}: present, reused")
    elif action is BaseAction.REFUSE:
        raise BaseImageError(
            f"base image {spec.name} is absent and --no-pull forbids pulling it; pull it "
            "yourself or drop --no-pull"
        )
    elif action is BaseAction.PULL:
        report.line(f"base image {spec.name}: absent, pulling it (pinned by digest)")
        try:
            daemon.pull(spec.name)
        except Exception as exc:  # any SDK or connection error means: cannot be pulled here
            raise BaseImageError(
                f"base image {spec.name}: pull failed ({_first_line(exc)}); a digest-pinned "
                "base must be pullable (or loaded with `docker load`)"
            ) from exc
        report.line(f"base image {spec.name}: pulled")
    else:
        report.line(f"base image {spec.name}: absent, making it (never pulled by a tag)")
        bootstrap(daemon, docker_binary, spec, report)
    return action


def bootstrap(daemon: Daemon, docker_binary: str, spec: BaseImageSpec, report: Reporter) -> None:
    """debootstrap into a temporary folder, trim caches, `tar | docker import`."""
    if shutil.which("debootstrap") is None:
        raise BaseImageError(
            f"base image {spec.name} is absent and cannot be pulled, and `debootstrap` is not "
            "installed: run scripts/setup-host.sh (apt-get install debootstrap), or pass "
            "--base-image NAME of a local image that has python3 with venv and pip"
        )
    start = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="sidecar-forge-base-", dir="/var/tmp"))
    root = workdir / "rootfs"
    try:
        report.line(
            f"base image {spec.name}: debootstrap {spec.suite} ({spec.variant}) into {root}"
        )
        _run_debootstrap(debootstrap_argv(spec, root), report)
        slim_root(root, spec.trim)
        normalize_root(root)
        report.line(f"base image {spec.name}: importing the root file system")
        _import(root, docker_binary, spec.name)
    finally:
        _unmount_below(root)
        shutil.rmtree(workdir, ignore_errors=True)
    if not daemon.image_exists(spec.name):
        raise BaseImageError(f"base image {spec.name}: import finished but the image is missing")
    report.line(f"base image {spec.name}: made in {time.monotonic() - start:.0f} s")


# dpkg drops these paths from any package installed later (`apt-get install` in a derived
# image), so the base stays slim there too.
DPKG_EXCLUDES = """\
# sidecar-forge: no documentation, manuals or translations (copyright files stay)
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
"""


def slim_root(root: Path, trim: tuple[str, ...]) -> None:
    """Remove the trimmed paths' contents (folders stay: packages expect them), keeping
    `usr/share/doc/*/copyright`; install the dpkg excludes."""
    for rel in trim:
        target = root / rel
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            for child in target.iterdir():
                if rel == "usr/share/doc" and child.is_dir() and not child.is_symlink():
                    for item in child.iterdir():
                        if item.name != "copyright":
                            _remove(item)
                    continue
                _remove(child)
    conf = root / "etc/dpkg/dpkg.cfg.d"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "01-sidecar-forge-slim").write_text(DPKG_EXCLUDES)


def normalize_root(root: Path) -> None:
    """Fix what debootstrap writes differently on each run, so two bases compare equal."""
    shadow = root / "etc/shadow"
    if shadow.is_file():
        # field 3 is the day of the last password change: debootstrap writes "today"
        lines = []
        for line in shadow.read_text().splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[2]:
                fields[2] = "19000"
            lines.append(":".join(fields))
        shadow.write_text("\n".join(lines) + "\n")
    # Debian compiles the system Python's modules at install time with timestamp headers, in
    # several processes; one pass with hash-based headers gives the same bytes every time.
    pycaches = [p for p in root.glob("usr/lib/python3*/**/__pycache__") if p.is_dir()]
    for cache in pycaches:
        shutil.rmtree(cache)
    subprocess.run(
        [
            "chroot",
            str(root),
            "python3",
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "unchecked-hash",
            "/usr/lib/python3",
            *sorted({f"/usr/lib/{p.name}" for p in root.glob("usr/lib/python3.*")}),
        ],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SOURCE_DATE_EPOCH": "0"},
    )


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# debootstrap's "I: <Word> ..." lines, grouped into the phases people care about.
PHASES = {
    "Retrieving": "downloading packages",
    "Validating": "downloading packages",
    "Extracting": "extracting packages",
    "Installing": "installing packages",
    "Unpacking": "installing packages",
    "Configuring": "configuring packages",
}


def phase_of(line: str) -> str | None:
    """The coarse phase of one debootstrap output line, or None for other lines."""
    if not line.startswith("I: "):
        return None
    return PHASES.get(line[3:].split(" ", 1)[0])


def _run_debootstrap(argv: list[str], report: Reporter) -> None:
    """Run debootstrap: one line per phase, and the current package on the live status."""
    tail: list[str] = []
    phase: str | None = None
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            tail = [*tail[-19:], line]
            current = phase_of(line)
            if current is not None and current != phase:
                phase = current
                report.line(f"  debootstrap: {phase}")
            if line.startswith("I: "):
                report.status(f"debootstrap: {line[3:]}")
        rc = proc.wait()
    if rc != 0:
        detail = "\n".join(tail)
        raise BaseImageError(f"debootstrap exited with status {rc}; last output:\n{detail}")


def _import(root: Path, docker_binary: str, name: str) -> None:
    """`tar -C root -c . | docker import --change ... - name`."""
    changes = [arg for change in import_changes() for arg in ("--change", change)]
    with subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(root), "-c", "."], stdout=subprocess.PIPE
    ) as tar:
        imported = subprocess.run(
            [docker_binary, "import", *changes, "-", name],
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            check=False,
        )
        tar_rc = tar.wait()
    if tar_rc != 0 or imported.returncode != 0:
        raise BaseImageError(
            f"importing {root} as {name} failed (tar status {tar_rc}, docker import status "
            f"{imported.returncode}): {imported.stderr.strip()}"
        )


def _unmount_below(root: Path) -> None:
    """A failed debootstrap can leave /proc or /sys mounted inside; never rm -r through them."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = str(root) + "/"
    points = sorted(
        (line.split()[1] for line in mounts if line.split()[1].startswith(prefix)), reverse=True
    )
    for point in points:
        subprocess.run(["umount", "-l", point], check=False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
