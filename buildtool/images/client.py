"""Finding a BuildKit client on the command line.

Order: `docker buildx` (the plugin), then `docker build` with `DOCKER_BUILDKIT=1` from a client
that has BuildKit built in (Debian's 20.10 client does; newer clients without the buildx plugin
refuse with "BuildKit is enabled but the buildx component is missing"). Each candidate binary is
probed once; the choice is a pure function of the probe results.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Where Debian's docker.io puts its client; checked after whatever `docker` is first on PATH.
WELL_KNOWN_CLIENTS: tuple[str, ...] = ("/usr/bin/docker",)
PROBE_TIMEOUT_S = 20


@dataclass(frozen=True)
class Probe:
    """What one docker client binary can do."""

    binary: str
    has_buildx: bool
    has_builtin_buildkit: bool


@dataclass(frozen=True)
class BuildkitClient:
    """How to invoke a BuildKit build: `argv_prefix + [options] + [context]`, with `env` added."""

    kind: str  # "buildx" or "builtin"
    binary: str
    argv_prefix: tuple[str, ...]
    env: tuple[tuple[str, str], ...]

    @property
    def supports_builder(self) -> bool:
        return self.kind == "buildx"

    @property
    def supports_cache_to(self) -> bool:
        return self.kind == "buildx"

    def describe(self) -> str:
        if self.kind == "buildx":
            return f"{self.binary} buildx build (buildx plugin)"
        return f"DOCKER_BUILDKIT=1 {self.binary} build (BuildKit built into the client)"


class NoBuildkitClient(RuntimeError):
    """No candidate can run a BuildKit build; the message says what each one answered."""


def choose_client(probes: Sequence[Probe]) -> BuildkitClient | None:
    """Prefer buildx on any candidate, then a built-in BuildKit client, in candidate order."""
    for probe in probes:
        if probe.has_buildx:
            return BuildkitClient("buildx", probe.binary, (probe.binary, "buildx", "build"), ())
    for probe in probes:
        if probe.has_builtin_buildkit:
            return BuildkitClient(
                "builtin", probe.binary, (probe.binary, "build"), (("DOCKER_BUILDKIT", "1"),)
            )
    return None


def candidate_binaries(
    path_env: str | None, well_known: Sequence[str] = WELL_KNOWN_CLIENTS
) -> list[str]:
    """`docker` on PATH first, then the well-known locations; duplicates (same file) once."""
    found: list[str] = []
    seen: set[str] = set()
    first = shutil.which("docker", path=path_env)
    for candidate in ([first] if first else []) + list(well_known):
        if not os.access(candidate, os.X_OK):
            continue
        real = os.path.realpath(candidate)
        if real not in seen:
            seen.add(real)
            found.append(candidate)
    return found


Runner = Callable[[list[str], dict[str, str]], tuple[int, str]]


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return done.returncode, done.stdout + done.stderr


def probe(binary: str, base_env: dict[str, str], run: Runner = _run) -> Probe:
    """Ask `binary` whether buildx works, and whether `build` accepts BuildKit-only options."""
    rc, _ = run([binary, "buildx", "version"], base_env)
    has_buildx = rc == 0
    rc, out = run([binary, "build", "--help"], {**base_env, "DOCKER_BUILDKIT": "1"})
    # Only a BuildKit-capable `build` lists --secret; a client that refuses BuildKit fails here.
    has_builtin = rc == 0 and "--secret" in out
    return Probe(binary, has_buildx, has_builtin)


def find_client(base_env: dict[str, str], run: Runner = _run) -> BuildkitClient:
    """The first working BuildKit client, or `NoBuildkitClient` naming what was tried."""
    probes = [probe(b, base_env, run) for b in candidate_binaries(base_env.get("PATH"))]
    client = choose_client(probes)
    if client is None:
        tried = ", ".join(p.binary for p in probes) or "no `docker` binary on PATH or in /usr/bin"
        raise NoBuildkitClient(
            f"no BuildKit client found (tried {tried}): install the buildx plugin, or Debian's "
            "docker.io client (its `docker build` has BuildKit built in)"
        )
    return client


def builder_driver(
    client: BuildkitClient, builder: str | None, base_env: dict[str, str], run: Runner = _run
) -> str | None:
    """The buildx builder's driver (`docker`, `docker-container`, `remote`, ...); None for the
    built-in client (which always builds in the daemon, seeing its local images)."""
    if client.kind != "buildx":
        return None
    argv = [client.binary, "buildx", "inspect", *([builder] if builder else [])]
    rc, out = run(argv, base_env)
    if rc != 0:
        return None
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Driver":
            return value.strip()
    return None
