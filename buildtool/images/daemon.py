"""The Docker daemon, through the Docker SDK for Python: reachability, images, sizes.

The SDK's own `images.build` uses the legacy builder (no `RUN --mount`), so builds go through a
BuildKit client on the command line (see `client.py`); everything else goes through the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors


@dataclass(frozen=True)
class DaemonInfo:
    """What the build driver reports about the daemon it talks to."""

    version: str
    api_version: str
    os: str
    arch: str


class Daemon:
    """A reachable daemon; create with `connect()`."""

    def __init__(self, client: Any, info: DaemonInfo) -> None:
        self._client = client
        self.info = info

    @property
    def sdk(self) -> Any:
        return self._client

    def image_exists(self, name: str) -> bool:
        try:
            self._client.images.get(name)
        except docker.errors.ImageNotFound:
            return False
        return True

    def image_size(self, name: str) -> int:
        """Size in bytes of a local image (what `docker images` shows)."""
        return int(self._client.images.get(name).attrs["Size"])

    def image_id(self, name: str) -> str:
        return str(self._client.images.get(name).id)

    def pull(self, name: str) -> None:
        """Pull `name`; raises `docker.errors.APIError` (or a connection error) on failure."""
        repository, tag = split_reference(name)
        self._client.images.pull(repository, tag=tag)

    def close(self) -> None:
        self._client.close()


def split_reference(name: str) -> tuple[str, str]:
    """`repo:tag` -> (repo, tag); `repo[:tag]@sha256:…` -> (repo, digest): a digest wins (the
    daemon pulls by digest and ignores a tag beside it); no tag -> `latest`."""
    if "@" in name:
        repository, _, digest = name.partition("@")
        last = repository.split("/")[-1]
        if ":" in last:
            repository = repository[: len(repository) - len(last)] + last.split(":", 1)[0]
        return repository, digest
    last = name.split("/")[-1]
    if ":" in last:
        repository, _, tag = name.rpartition(":")
        return repository, tag
    return name, "latest"


def connect(
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: int = 10,
    operation_timeout: int = 300,
) -> Daemon | None:
    """The daemon at `base_url`, else where `environ` (DOCKER_HOST, DOCKER_TLS_VERIFY, ...) says,
    else the default socket; None when it does not answer a ping within `timeout` seconds.
    Later calls may take up to `operation_timeout`: a busy daemon (builds running) can spend
    longer than the ping's 10 s removing or importing a large image, or starting a container."""
    try:
        client = (
            docker.DockerClient(base_url=base_url, timeout=timeout)
            if base_url
            else docker.from_env(timeout=timeout, environment=dict(environ or {}))
        )
        client.ping()
        version = client.version()
    except (docker.errors.DockerException, OSError):
        return None
    client.api.timeout = operation_timeout
    info = DaemonInfo(
        version=str(version.get("Version", "?")),
        api_version=str(version.get("ApiVersion", "?")),
        os=str(version.get("Os", "?")),
        arch=str(version.get("Arch", "?")),
    )
    return Daemon(client, info)
