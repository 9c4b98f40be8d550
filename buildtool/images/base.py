"""Base image provisioning: reuse a local image, else pull it, else debootstrap and import it.

No registry is reachable on some machines, and `FROM` must then name a local image. A Debian
minbase with python3 made by debootstrap and `docker import` takes about a minute, once.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from buildtool.images.engine import Engine
from buildtool.images.ui import Reporter


class BaseAction(Enum):
    REUSE = "present"
    PULL = "pulled"
    BOOTSTRAP = "bootstrapped with debootstrap"


@dataclass(frozen=True)
class BaseImageSpec:
    """How to make the base image when it has to be made."""

    name: str
    suite: str = "bookworm"
    variant: str = "minbase"
    include: tuple[str, ...] = ("python3", "python3-venv", "python3-pip")
    mirror: str | None = None
    allow_pull: bool = True
    # Trimmed from the root file system before import: package caches, not part of the OS.
    trim: tuple[str, ...] = ("var/cache/apt/archives", "var/lib/apt/lists")


class BaseImageError(RuntimeError):
    """Provisioning failed; the message names the step and what to do."""


def decide(present: bool, pull_failed: bool | None) -> BaseAction:
    """Present: reuse. Absent: pull first (when allowed). A failed or refused pull: bootstrap."""
    if present:
        return BaseAction.REUSE
    if pull_failed is None or not pull_failed:
        return BaseAction.PULL
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
    engine: Engine, docker_binary: str, spec: BaseImageSpec, report: Reporter
) -> BaseAction:
    """Make sure `spec.name` exists locally; says what it did through `report`."""
    if engine.image_exists(spec.name):
        report.line(f"base image {spec.name}: present, reused")
        return BaseAction.REUSE
    pull_failed: bool | None = True
    if spec.allow_pull:
        report.line(f"base image {spec.name}: absent, trying to pull it")
        try:
            engine.pull(spec.name)
            pull_failed = False
        except Exception as exc:  # any SDK or connection error means: cannot be pulled here
            report.line(f"base image {spec.name}: cannot be pulled ({_first_line(exc)})")
    action = decide(False, pull_failed)
    if action is BaseAction.PULL:
        report.line(f"base image {spec.name}: pulled")
        return action
    bootstrap(engine, docker_binary, spec, report)
    return BaseAction.BOOTSTRAP


def bootstrap(engine: Engine, docker_binary: str, spec: BaseImageSpec, report: Reporter) -> None:
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
        for rel in spec.trim:
            target = root / rel
            if target.is_dir():
                for child in target.iterdir():
                    if child.is_file() or child.is_symlink():
                        child.unlink()
        report.line(f"base image {spec.name}: importing the root file system")
        _import(root, docker_binary, spec.name)
    finally:
        _unmount_below(root)
        shutil.rmtree(workdir, ignore_errors=True)
    if not engine.image_exists(spec.name):
        raise BaseImageError(f"base image {spec.name}: import finished but the image is missing")
    report.line(f"base image {spec.name}: made in {time.monotonic() - start:.0f} s")


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
