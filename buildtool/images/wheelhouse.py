"""A hash-pinned wheelhouse prepared on the host, so images install offline.

Inside containers on some machines TLS to the package index fails (the host's CA bundle is not
in the image), and baking a CA bundle into a layer would leak it into every image. So the host
downloads binary wheels for the image's Python and platform (`pip download --only-binary=:all:`,
versions from constraints.txt; pip checks the index's hashes as it downloads), writes
requirement files with `--hash` pins, and the Dockerfile installs with
`pip install --no-index --require-hashes`.

Layout (under the build context, so a `RUN --mount=type=bind` can reach it):
    wheelhouse/*.whl
    wheelhouse/runtime.txt   # what the sidecar images run with ([project].dependencies only)
    wheelhouse/build.txt     # what the builder stages also need (pip, blake3, pytest, setuptools)
    wheelhouse/inputs.sha256 # digest of everything above was made from; equal means reuse
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from buildtool.images.ui import Reporter

# The builder stages run the helper's regression tests (blake3 is the helper's hash), build a
# wheel with setuptools and install it with installer (buildtool.images.install). pip's own
# wheel runs the installs straight from the wheelhouse, so no venv needs pip inside it.
BUILD_TOOLS: tuple[str, ...] = (
    "pip",
    "blake3",
    "pytest",
    "pytest-timeout",
    "hypothesis",
    "setuptools",
    "wheel",
    "installer",
)
# glibc of Debian bookworm is 2.36: every manylinux tag up to it is compatible.
GLIBC_MINOR = 36
ARCH_BY_PLATFORM = {
    "linux/amd64": "x86_64",
    "linux/arm64": "aarch64",
    "linux/arm64/v8": "aarch64",
}

_WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


@dataclass(frozen=True)
class WheelhouseSpec:
    """What to download: for which Python and platforms, from which pins."""

    directory: Path
    pyproject: Path
    constraints: Path
    platforms: tuple[str, ...]
    python_version: str = "3.11"
    build_tools: tuple[str, ...] = BUILD_TOOLS


class WheelhouseError(RuntimeError):
    """The wheelhouse could not be prepared; the message names the input or command."""


def runtime_requirements(pyproject: Path) -> list[str]:
    """The project's declared runtime dependencies (names only; versions come from constraints)."""
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise WheelhouseError(f"cannot read {pyproject}: {exc}") from exc
    deps = data.get("project", {}).get("dependencies")
    if not isinstance(deps, list):
        raise WheelhouseError(f"{pyproject}: [project].dependencies is missing or not a list")
    return [str(d) for d in deps]


def pinned_versions(constraints: Path) -> dict[str, str]:
    """`name==version` lines of the constraints file, by normalized name."""
    pins: dict[str, str] = {}
    try:
        lines = constraints.read_text().splitlines()
    except OSError as exc:
        raise WheelhouseError(f"cannot read {constraints}: {exc}") from exc
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[normalize(name)] = version.strip()
    return pins


def normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_platform_tags(platform: str) -> list[str]:
    """`linux/amd64` -> manylinux tags pip accepts for `--platform` (newest first)."""
    arch = ARCH_BY_PLATFORM.get(platform)
    if arch is None:
        known = ", ".join(sorted(ARCH_BY_PLATFORM))
        raise WheelhouseError(f"unsupported --platform {platform!r}: choose from {known}")
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_MINOR, 16, -1)]
    tags.append(f"manylinux2014_{arch}")
    if arch == "x86_64":
        tags += ["manylinux2010_x86_64", "manylinux1_x86_64"]
    return tags


def inputs_digest(spec: WheelhouseSpec) -> str:
    """Digest of everything the wheelhouse is made from; equal digest means reuse."""
    h = hashlib.sha256()
    h.update(b"wheelhouse-v1\0")
    for req in runtime_requirements(spec.pyproject):
        h.update(req.encode() + b"\0")
    h.update(b"\0".join(t.encode() for t in spec.build_tools) + b"\0")
    h.update(spec.constraints.read_bytes())
    h.update("\0".join(spec.platforms).encode() + b"\0" + spec.python_version.encode())
    return h.hexdigest()


def requirement_lines(files: Sequence[Path]) -> list[str]:
    """One `name==version --hash=...` line per distribution; every platform's file is a hash."""
    hashes: dict[tuple[str, str], set[str]] = {}
    for path in files:
        match = _WHEEL_NAME.match(path.name)
        if match is None:
            raise WheelhouseError(f"{path}: not a wheel file name")
        key = (normalize(match["name"]), match["version"])
        hashes.setdefault(key, set()).add(sha256_file(path))
    lines = []
    for (name, version), digests in sorted(hashes.items()):
        pins = " ".join(f"--hash=sha256:{d}" for d in sorted(digests))
        lines.append(f"{name}=={version} {pins}")
    return lines


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pip_command() -> list[str]:
    """pip of the running interpreter (uv-made nox venvs have none: the build session adds it)."""
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise WheelhouseError(
            f"{sys.executable} has no pip module: install pip into this environment "
            "(`pip` is pinned in constraints.txt) to prepare the wheelhouse"
        )
    return [sys.executable, "-m", "pip"]


def download_argv(
    pip: Sequence[str], spec: WheelhouseSpec, platform: str, dest: Path, reqs: Path
) -> list[str]:
    py = spec.python_version
    abi = "cp" + py.replace(".", "")
    argv = [*pip, "download", "--quiet", "--only-binary=:all:", "--dest", str(dest)]
    for tag in pip_platform_tags(platform):
        argv += ["--platform", tag]
    argv += ["--python-version", py, "--implementation", "cp"]
    argv += ["--abi", abi, "--abi", "abi3", "--abi", "none"]
    argv += ["-c", str(spec.constraints), "-r", str(reqs)]
    return argv


def prepare(spec: WheelhouseSpec, report: Reporter, pip: Sequence[str] | None = None) -> bool:
    """Make or reuse the wheelhouse; returns True when it was (re)made."""
    digest = inputs_digest(spec)
    stamp = spec.directory / "inputs.sha256"
    if stamp.is_file() and stamp.read_text().strip() == digest:
        report.line(f"wheelhouse {spec.directory}: up to date, reused")
        return False
    pip = list(pip) if pip is not None else pip_command()
    pins = pinned_versions(spec.constraints)
    groups = {
        "runtime": runtime_requirements(spec.pyproject),
        "build": list(spec.build_tools),
    }
    for tool in spec.build_tools:
        if normalize(tool) not in pins:
            raise WheelhouseError(
                f"{spec.constraints}: no `{tool}==VERSION` pin for the wheelhouse"
            )
    with tempfile.TemporaryDirectory(prefix="wheelhouse-") as tmp:
        files_by_group: dict[str, list[Path]] = {}
        for group, reqs in groups.items():
            req_file = Path(tmp) / f"{group}.in"
            req_file.write_text("\n".join(reqs) + "\n")
            files: list[Path] = []
            for platform in spec.platforms:
                dest = Path(tmp) / group / platform.replace("/", "_")
                dest.mkdir(parents=True)
                py = spec.python_version
                report.line(f"wheelhouse: downloading {group} wheels for {platform}, Python {py}")
                argv = download_argv(pip, spec, platform, dest, req_file)
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise WheelhouseError(
                        f"pip download for {group} ({platform}) failed with status "
                        f"{done.returncode}:\n{done.stderr.strip()[-2000:]}"
                    )
                files += sorted(dest.glob("*.whl"))
            for path in files:
                name = _WHEEL_NAME.match(path.name)
                if name and normalize(name["name"]) not in pins:
                    raise WheelhouseError(
                        f"{path.name} is not pinned in {spec.constraints}: add "
                        f"`{name['name']}=={name['version']}` so the wheelhouse is reproducible"
                    )
            files_by_group[group] = files
        # Fill a sibling folder, stamp it last, then swap it in by renames: a failed download
        # or a kill at any point never leaves a half-made wheelhouse that looks up to date.
        fresh = spec.directory.with_name(f".{spec.directory.name}.new")
        stale = spec.directory.with_name(f".{spec.directory.name}.old")
        for leftover in (fresh, stale):
            if leftover.exists():
                shutil.rmtree(leftover)
        fresh.mkdir(parents=True)
        for group, files in files_by_group.items():
            for path in files:
                shutil.copy2(path, fresh / path.name)
            (fresh / f"{group}.txt").write_text("\n".join(requirement_lines(files)) + "\n")
        (fresh / "inputs.sha256").write_text(digest + "\n")
        if spec.directory.exists():
            spec.directory.rename(stale)
        fresh.rename(spec.directory)
        if stale.exists():
            shutil.rmtree(stale)
    count = len(list(spec.directory.glob("*.whl")))
    report.line(f"wheelhouse {spec.directory}: {count} wheels, hash-pinned")
    return True
