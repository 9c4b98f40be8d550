"""Base image provisioning on the real daemon: absent and not pullable -> debootstrap + import;
present -> reused. Takes about a minute (a real debootstrap of Debian bookworm minbase)."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from buildtool.images import manifest
from buildtool.images.daemon import Daemon
from buildtool.images.targets import DEFAULT_BASE_IMAGE

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def provision(name: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-B", "-m", "buildtool", "images", "base", "--base-image", name],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_absent_base_is_bootstrapped_then_reused(daemon: Daemon) -> None:
    name = f"sidecar-forge-test/base:{secrets.token_hex(4)}"
    assert not daemon.image_exists(name)
    try:
        first = provision(name)
        assert "never pulled by a tag" in first.stderr and "pulling" not in first.stderr
        assert "debootstrap: downloading packages" in first.stderr  # progress by phase
        assert first.stdout.strip() == f"{name}: bootstrapped with debootstrap"
        assert daemon.image_exists(name)
        script = (
            "python3 -m venv --without-pip /tmp/v && /tmp/v/bin/python -c "
            "'import sys; print(sys.version_info[:2])' && "
            "(python3 -m pip --version >/dev/null 2>&1 && echo pip || echo no-pip) && "
            "find /usr/share/man /usr/share/locale -mindepth 1 | wc -l && "
            "find /usr/share/doc -type f ! -name copyright | wc -l && cut -d: -f3 /etc/shadow"
        )
        out = daemon.sdk.containers.run(
            name, ["sh", "-c", script], remove=True, network_disabled=True
        )
        version, pip, manuals, docs, *days = bytes(out).decode().splitlines()
        assert version == "(3, 11)"
        assert pip == "no-pip"  # venvs are made --without-pip; pip runs from the wheelhouse
        assert (manuals, docs) == ("0", "0")  # slim: no manuals, translations, docs
        assert set(days) == {"19000"}  # fixed, not the day debootstrap ran
        image_id = daemon.image_id(name)
        if daemon.image_exists(DEFAULT_BASE_IMAGE):
            # two debootstraps (another run, maybe another machine) hold the same files, unless
            # the Debian mirror published new package versions in between
            ours = manifest.of_image(daemon.sdk, name)
            theirs = manifest.of_image(daemon.sdk, DEFAULT_BASE_IMAGE)
            differing = manifest.differences(ours, theirs)
            versus = f"compared with {DEFAULT_BASE_IMAGE}"
            print(f"base: {len(ours)} entries {versus}, {len(differing)} differ")
            if not _packages_differ(daemon, name):
                assert differing == [], "\n".join(differing[:20])

        again = provision(name)
        assert again.stdout.strip() == f"{name}: present"
        assert "debootstrap" not in again.stderr
        assert daemon.image_id(name) == image_id
    finally:
        if daemon.image_exists(name):
            daemon.sdk.images.remove(name, force=True)


def _packages_differ(daemon: Daemon, name: str) -> bool:
    query = ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"]
    listed = [
        bytes(daemon.sdk.containers.run(image, query, remove=True, network_disabled=True))
        for image in (name, DEFAULT_BASE_IMAGE)
    ]
    return listed[0] != listed[1]
