"""Shared helpers for the image tests: copies of the workspace, builds, containers."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from buildtool.images import plainlog
from buildtool.images.context import top_level_whitelist
from buildtool.images.daemon import Daemon
from buildtool.images.targets import TARGETS, parse_targets

ROOT = Path(__file__).resolve().parents[3]


def selected_targets() -> tuple[str, ...]:
    """SIDECAR_FORGE_IMAGE_TARGETS (`vllm,sglang`), else all three images."""
    names = [n for n in os.environ.get("SIDECAR_FORGE_IMAGE_TARGETS", "").split(",") if n.strip()]
    return parse_targets([n.strip() for n in names]) if names else TARGETS


BUILD_TIMEOUT_S = 900


def copy_workspace(dest: Path) -> Path:
    """What the Dockerfile builds from (the .dockerignore whitelist, plus the wheelhouse)."""
    names = top_level_whitelist((ROOT / ".dockerignore").read_text()) or set()
    dest.mkdir(parents=True, exist_ok=True)
    for name in sorted(names):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def build_images(
    workspace: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = BUILD_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """`buildtool images build` on `workspace`; fails the test with the output on error."""
    done = subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "buildtool",
            "images",
            "build",
            "--workspace",
            str(workspace),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"build failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def build_log_steps(workspace: Path, target: str) -> list[plainlog.Step]:
    return plainlog.parse(
        (workspace / ".reports" / "images" / f"{target}.log").read_text().splitlines()
    )


def read_in_image(daemon: Daemon, tag: str, module: str) -> str:
    """The installed source of `module` inside the image (no import of the module itself)."""
    code = (
        "import importlib.util, sys; "
        f"spec = importlib.util.find_spec({module!r}); "
        "sys.stdout.write(open(spec.origin, encoding='utf-8').read())"
    )
    out = daemon.sdk.containers.run(tag, ["-c", code], entrypoint="python3", remove=True)
    return bytes(out).decode()


def bridge_gateway(daemon: Daemon) -> str:
    """The host's address on Docker's default bridge, where containers reach host servers."""
    config = daemon.sdk.networks.get("bridge").attrs["IPAM"]["Config"][0]
    if config.get("Gateway"):
        return str(config["Gateway"])
    network = ipaddress.ip_network(config["Subnet"])
    return str(network.network_address + 1)


def published_port(container: Any, port: str = "8080/tcp") -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        container.reload()
        bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(port)
        if bindings:
            return int(bindings[0]["HostPort"])
        time.sleep(0.2)
    raise AssertionError(f"container {container.short_id} published no {port}")


def wait_live(url: str, container: Any, timeout: float = 60.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        container.reload()
        if container.status == "exited":
            raise AssertionError(f"container exited:\n{container.logs().decode()}")
        try:
            response = httpx.get(f"{url}/live", timeout=2)
            if response.status_code == 200:
                return response
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.3)
    raise AssertionError(f"{url}/live never answered ({last}):\n{container.logs().decode()}")


def wait_health(container: Any, timeout: float = 60.0) -> str:
    """Docker's HEALTHCHECK verdict once it leaves `starting`."""
    deadline = time.monotonic() + timeout
    status = "none"
    while time.monotonic() < deadline:
        container.reload()
        status = container.attrs["State"].get("Health", {}).get("Status", "none")
        if status not in ("starting", "none"):
            return str(status)
        time.sleep(0.5)
    return str(status)
