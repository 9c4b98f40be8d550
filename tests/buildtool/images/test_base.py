"""Base image provisioning decisions and the debootstrap command."""

from __future__ import annotations

import pytest

from buildtool.images import base
from buildtool.images.base import (
    BaseAction,
    BaseImageSpec,
    decide,
    phase_of,
    pinned_by_digest,
)
from buildtool.images.daemon import split_reference
from buildtool.images.targets import DEFAULT_BASE_IMAGE
from buildtool.images.ui import ListReporter


def test_decide_never_pulls_an_unpinned_name() -> None:
    assert decide(True, pinned=False, allow_pull=True) is BaseAction.REUSE
    assert decide(True, pinned=True, allow_pull=True) is BaseAction.REUSE
    # absent, not pinned: made locally, whatever the name (the default one included)
    assert decide(False, pinned=False, allow_pull=True) is BaseAction.BOOTSTRAP
    assert decide(False, pinned=True, allow_pull=True) is BaseAction.PULL
    assert decide(False, pinned=True, allow_pull=False) is BaseAction.REFUSE


def test_pinned_by_digest() -> None:
    digest = "sha256:" + "ab" * 32
    assert pinned_by_digest(f"python:3.11-slim-bookworm@{digest}")
    assert pinned_by_digest(f"mirror.example:5000/library/python@{digest}")
    assert not pinned_by_digest(DEFAULT_BASE_IMAGE)
    assert not pinned_by_digest("python:3.11-slim-bookworm")
    assert not pinned_by_digest("python@sha256:short")


def test_split_reference_pulls_by_digest() -> None:
    digest = "sha256:" + "cd" * 32
    assert split_reference(f"python:3.11-slim@{digest}") == ("python", digest)
    assert split_reference(f"127.0.0.1:5000/x/base@{digest}") == ("127.0.0.1:5000/x/base", digest)
    assert split_reference("127.0.0.1:5000/x/base:v1") == ("127.0.0.1:5000/x/base", "v1")
    assert split_reference("x/base") == ("x/base", "latest")


class _Daemon:
    """Only what `ensure_base_image` asks of the daemon; records pulls."""

    def __init__(self) -> None:
        self.pulled: list[str] = []

    def image_exists(self, name: str) -> bool:
        return False

    def pull(self, name: str) -> None:
        self.pulled.append(name)


def test_default_base_is_never_pulled(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    monkeypatch.setattr(base, "bootstrap", lambda d, docker, spec, report: made.append(spec.name))
    daemon = _Daemon()
    report = ListReporter()
    action = base.ensure_base_image(daemon, "docker", BaseImageSpec(DEFAULT_BASE_IMAGE), report)  # type: ignore[arg-type]
    assert action is BaseAction.BOOTSTRAP and made == [DEFAULT_BASE_IMAGE]
    assert daemon.pulled == []
    assert any("never pulled by a tag" in line for line in report.lines)
    pinned = "python:3.11-slim-bookworm@sha256:" + "ef" * 32
    action = base.ensure_base_image(daemon, "docker", BaseImageSpec(pinned), report)  # type: ignore[arg-type]
    assert action is BaseAction.PULL
    assert daemon.pulled == [pinned] and made == [DEFAULT_BASE_IMAGE]
    with pytest.raises(base.BaseImageError, match="--no-pull"):
        base.ensure_base_image(daemon, "docker", BaseImageSpec(pinned, allow_pull=False), report)  # type: ignore[arg-type]


def test_the_base_is_slim_and_python_only() -> None:
    spec = BaseImageSpec("x:y")
    assert spec.include == ("python3",)
    for path in ("usr/share/doc", "usr/share/man", "usr/share/locale", "var/log"):
        assert path in spec.trim


def test_phases_from_debootstrap_lines() -> None:
    assert phase_of("I: Retrieving libc6 2.36-9") == "downloading packages"
    assert phase_of("I: Validating libc6 2.36-9") == "downloading packages"
    assert phase_of("I: Configuring python3...") == "configuring packages"
    assert phase_of("W: Failure trying to run: chroot") is None
    assert phase_of("I: Base system installed successfully.") is None
