"""Base image provisioning on the real engine: absent and not pullable -> debootstrap + import;
present -> reused. Takes about a minute (a real debootstrap of Debian bookworm minbase)."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from buildtool.images.engine import Engine

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


def test_absent_base_is_bootstrapped_then_reused(engine: Engine) -> None:
    name = f"sidecar-forge-test/base:{secrets.token_hex(4)}"
    assert not engine.image_exists(name)
    try:
        first = provision(name)
        assert "cannot be pulled" in first.stderr
        assert "debootstrap: downloading packages" in first.stderr  # progress by phase
        assert first.stdout.strip() == f"{name}: bootstrapped with debootstrap"
        assert engine.image_exists(name)
        out = engine.sdk.containers.run(
            name,
            ["python3", "-c", "import venv, ensurepip, sys; print(sys.version_info[:2])"],
            remove=True,
            network_disabled=True,
        )
        assert bytes(out).decode().strip() == "(3, 11)"
        image_id = engine.image_id(name)

        again = provision(name)
        assert again.stdout.strip() == f"{name}: present"
        assert "debootstrap" not in again.stderr
        assert engine.image_id(name) == image_id
    finally:
        if engine.image_exists(name):
            engine.sdk.images.remove(name, force=True)
