"""README's set-up on stock Debian 12, in a clean bookworm container made from the project's base.

The container has Debian's own, externally managed python3 (PEP 668: no `pip install` outside a
venv) and no pip at all. It clones a copy of this checkout's HEAD, then runs README's two
commands, read from README itself: the set-up (with SIDECAR_FORGE_NO_ENGINE=1, since there is no
Docker daemon inside, so the build step makes the sidecars' wheels in local mode) and the test
command as README gives it: the whole `nox -s test`, on Debian 12's own python3 (3.11.2, the
images' Python). Tests that need a Docker daemon skip there with their reason. Slow (packages
and wheels are downloaded, then the whole suite runs): it runs in `nox -s images`.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from images_support import ROOT

from buildtool.images.daemon import Daemon
from buildtool.images.targets import DEFAULT_BASE_IMAGE


def readme_commands() -> list[str]:
    """The shell commands in README's quick start, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_has_exactly_two_commands() -> None:
    assert readme_commands() == ["./scripts/setup.sh", "nox -s test"]


@pytest.mark.docker
@pytest.mark.slow
def test_readme_steps_in_a_clean_bookworm_container(
    daemon: Daemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    setup, test = readme_commands()
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(repo)], check=True)
    script = f"""
set -eux
test -f /usr/lib/python3.11/EXTERNALLY-MANAGED       # Debian's own python3
! python3 -m pip --version                           # and no pip at all
# the clone (README starts after it)
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends git ca-certificates
git clone -q /repo /root/sidecar-forge
cd /root/sidecar-forge
SIDECAR_FORGE_NO_ENGINE=1 {setup}
test "$(python3 -c 'import sys; print(sys.version_info[:3])')" = "(3, 11, 2)"
{test}
echo README-STEPS-OK
"""
    volumes = {str(repo): {"bind": "/repo", "mode": "ro"}}
    environment = {}
    # this machine kind reaches the package index through its own CA: hand it in, read-only
    ca = os.environ.get("SSL_CERT_FILE")
    if ca and Path(ca).is_file():
        volumes[ca] = {"bind": "/etc/ssl/host-ca.crt", "mode": "ro"}
        environment = {
            "SSL_CERT_FILE": "/etc/ssl/host-ca.crt",
            "PIP_CERT": "/etc/ssl/host-ca.crt",
        }
    container = daemon.sdk.containers.run(
        DEFAULT_BASE_IMAGE,
        ["bash", "-c", script],
        volumes=volumes,
        environment=environment,
        detach=True,
    )
    try:
        status = container.wait(timeout=3600)
        log = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    tail = "\n".join(log.splitlines()[-60:])
    assert status["StatusCode"] == 0, tail
    assert "setup: installing nox" in log  # into the venv the script made, not Debian's python
    assert "built locally (no Docker daemon reachable" in log  # the build step ran
    summary = re.findall(r"^=+ (.*\d+ passed.*) in [\d.]+s", log, flags=re.M)
    assert summary and "failed" not in summary[-1] and "error" not in summary[-1], tail
    assert "README-STEPS-OK" in log
    with capsys.disabled():  # the counts belong in CI's log
        print(f"\nnox -s test on Debian 12's python3 in a clean container: {summary[-1]}")
