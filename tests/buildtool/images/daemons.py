"""A second machine on this host: Debian's docker-registry on loopback and a second dockerd.

Used by tests/buildtool/images/test_second_daemon.py and benchmarks/bench_images.py. Both
daemons are started here and stopped here (by their own process, never by name), and leave
nothing behind:

- the registry: `docker-registry serve CONFIG`, on 127.0.0.1 at a free port (a loopback registry
  needs no TLS), storage in a temporary folder;
- the daemon: `dockerd` with its own --data-root, --exec-root, --pidfile and unix socket, and a
  bridge of its own made with `ip link add … type bridge` on its own /24, `--iptables=false
  --ip-masq=false --ip-forward=false`. Never `--bridge none`: such a daemon deletes the first
  daemon's docker0 at start-up, and the first daemon's builds then fail.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from images_support import build_images

DOCKER = "/usr/bin/docker"  # Debian's client, BuildKit built in


def missing_tools() -> list[str]:
    return [t for t in ("docker-registry", "dockerd", "ip") if shutil.which(t) is None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(
    check: object, what: str, timeout: float, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Registry:
    """`with Registry() as reg:` reg.address is `127.0.0.1:PORT`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sf-registry-", dir="/var/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def __enter__(self) -> Registry:
        config = self.root / "config.yml"
        config.write_text(
            "version: 0.1\n"
            "log:\n  level: warn\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.root / 'data'}\n"
            f"http:\n  addr: {self.address}\n"
        )
        log = self.root / "registry.log"
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["docker-registry", "serve", str(config)], stdout=out, stderr=subprocess.STDOUT
            )
        _wait(self._answers, "docker-registry", 30, self.proc, log)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None:
            _stop(self.proc)
        shutil.rmtree(self.root, ignore_errors=True)


def _used_subnets() -> str:
    return subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True, check=True).stdout


class SecondDaemon:
    """`with SecondDaemon() as b:` b.host is `unix://…/docker.sock`, an empty daemon."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sf-daemon-", dir="/var/tmp"))
        self.socket = self.root / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.bridge = "sfb" + secrets.token_hex(4)  # at most 15 characters
        self.proc: subprocess.Popen[bytes] | None = None
        self.bridge_made = False

    def docker(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DOCKER, "-H", self.host, *args], capture_output=True, text=True, check=check
        )

    def _answers(self) -> bool:
        return self.socket.exists() and self.docker("info", check=False).returncode == 0

    def __enter__(self) -> SecondDaemon:
        used = _used_subnets()
        third = next(n for n in range(213, 254) if f" 10.{n}.77." not in used)
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        self.bridge_made = True
        subprocess.run(["ip", "addr", "add", f"10.{third}.77.1/24", "dev", self.bridge], check=True)
        subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)
        log = self.root / "dockerd.log"
        argv = [
            "dockerd",
            f"--data-root={self.root / 'data'}",
            f"--exec-root={self.root / 'exec'}",
            f"--pidfile={self.root / 'dockerd.pid'}",
            f"--host={self.host}",
            f"--bridge={self.bridge}",  # never "none": that deletes the first daemon's docker0
            "--iptables=false",
            "--ip-masq=false",
            "--ip-forward=false",
            "--log-level=warn",
        ]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait(self._answers, "second dockerd", 60, self.proc, log)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def reset(self) -> None:
        """Back to an empty store: no images, no build cache (a machine that never built)."""
        self.docker("system", "prune", "--all", "--force")
        self.docker("builder", "prune", "--all", "--force")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None:
            _stop(self.proc, timeout=60)
            self.proc = None
        if self.bridge_made:
            subprocess.run(["ip", "link", "delete", self.bridge], check=False)
            self.bridge_made = False
        _unmount_below(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


def _unmount_below(root: Path) -> None:
    with contextlib.suppress(OSError):
        mounts = Path("/proc/mounts").read_text().splitlines()
        prefix = str(root) + "/"
        points = sorted(
            (m.split()[1] for m in mounts if m.split()[1].startswith(prefix)), reverse=True
        )
        for point in points:
            subprocess.run(["umount", "-l", point], check=False)


def buildtool_images(
    workspace: Path, *args: str, docker_host: str | None = None, timeout: float = 1500
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`buildtool images build` on `workspace` against a daemon; (seconds, result). Raises with
    the output when it fails."""
    env = dict(os.environ)
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    start = time.monotonic()
    done = build_images(workspace, *args, env=env, timeout=timeout)
    return time.monotonic() - start, done


def cache_from_args(refs: Sequence[str]) -> list[str]:
    return [arg for ref in refs for arg in ("--cache-from", ref)]


def remove_tags_under(docker_host: str | None, prefix: str) -> None:
    """Remove the local tags a push made (`prefix/...`) from a daemon; images stay if other
    tags still name them."""
    argv = [DOCKER, *(["-H", docker_host] if docker_host else []), "images", "--format"]
    listed = subprocess.run(
        [*argv, "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=False
    ).stdout.split()
    for name in (n for n in listed if n.startswith(prefix + "/")):
        subprocess.run(
            [DOCKER, *(["-H", docker_host] if docker_host else []), "rmi", name],
            capture_output=True,
            check=False,
        )
