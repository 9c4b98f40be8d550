"""Base image provisioning decisions and the debootstrap command."""

from __future__ import annotations

from pathlib import Path

from buildtool.images.base import BaseAction, BaseImageSpec, debootstrap_argv, decide, phase_of


def test_decide() -> None:
    assert decide(True, None) is BaseAction.REUSE
    assert decide(False, None) is BaseAction.PULL
    assert decide(False, False) is BaseAction.PULL
    assert decide(False, True) is BaseAction.BOOTSTRAP


def test_debootstrap_argv_is_the_documented_minbase() -> None:
    argv = debootstrap_argv(BaseImageSpec("x:y"), Path("/tmp/root"))
    assert argv == [
        "debootstrap",
        "--variant=minbase",
        "--include=python3,python3-venv,python3-pip",
        "bookworm",
        "/tmp/root",
    ]
    with_mirror = debootstrap_argv(BaseImageSpec("x:y", mirror="http://m/debian"), Path("/r"))
    assert with_mirror[-1] == "http://m/debian"


def test_phases_from_debootstrap_lines() -> None:
    assert phase_of("I: Retrieving libc6 2.36-9") == "downloading packages"
    assert phase_of("I: Validating libc6 2.36-9") == "downloading packages"
    assert phase_of("I: Configuring python3...") == "configuring packages"
    assert phase_of("W: Failure trying to run: chroot") is None
    assert phase_of("I: Base system installed successfully.") is None
