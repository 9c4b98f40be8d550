"""The wheelhouse's pure parts: pins, platform tags, hash-pinned requirement lines."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from buildtool.images import wheelhouse as wh
from buildtool.images.ui import ListReporter

ROOT = Path(__file__).resolve().parents[3]


def test_every_runtime_dependency_and_build_tool_is_pinned() -> None:
    pins = wh.pinned_versions(ROOT / "constraints.txt")
    names = [
        wh.normalize(r.split(">")[0].split("=")[0].split("[")[0])
        for r in wh.runtime_requirements(ROOT / "pyproject.toml")
    ]
    names += [wh.normalize(t) for t in wh.BUILD_TOOLS]
    assert names and all(n in pins for n in names), [n for n in names if n not in pins]


def test_platform_tags() -> None:
    amd = wh.pip_platform_tags("linux/amd64")
    assert amd[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in amd
    assert "manylinux2014_x86_64" in amd and "manylinux1_x86_64" in amd
    arm = wh.pip_platform_tags("linux/arm64")
    assert all(t.endswith("aarch64") for t in arm)
    with pytest.raises(wh.WheelhouseError, match="linux/s390x"):
        wh.pip_platform_tags("linux/s390x")


def test_requirement_lines_pin_every_platform_file(tmp_path: Path) -> None:
    files = {
        "blake3-1.0.11-cp311-cp311-manylinux_2_17_x86_64.whl": b"amd",
        "blake3-1.0.11-cp311-cp311-manylinux_2_17_aarch64.whl": b"arm",
        "Jinja2-3.1.6-py3-none-any.whl": b"jinja",
    }
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(tmp_path / name)
    lines = wh.requirement_lines(paths)
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}
    assert lines[0].startswith("blake3==1.0.11 ")
    assert f"--hash=sha256:{sha['blake3-1.0.11-cp311-cp311-manylinux_2_17_x86_64.whl']}" in lines[0]
    assert (
        f"--hash=sha256:{sha['blake3-1.0.11-cp311-cp311-manylinux_2_17_aarch64.whl']}" in lines[0]
    )
    assert lines[1] == f"jinja2==3.1.6 --hash=sha256:{sha['Jinja2-3.1.6-py3-none-any.whl']}"


def test_not_a_wheel_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "thing.tar.gz"
    bad.write_bytes(b"")
    with pytest.raises(wh.WheelhouseError, match=r"thing\.tar\.gz"):
        wh.requirement_lines([bad])


def test_inputs_digest_follows_constraints_and_platforms(tmp_path: Path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("rich==1\n")
    spec = wh.WheelhouseSpec(
        tmp_path / "wh", ROOT / "pyproject.toml", constraints, ("linux/amd64",)
    )
    first = wh.inputs_digest(spec)
    assert wh.inputs_digest(spec) == first
    assert (
        wh.inputs_digest(
            wh.WheelhouseSpec(spec.directory, spec.pyproject, constraints, ("linux/arm64",))
        )
        != first
    )
    constraints.write_text("rich==2\n")
    assert wh.inputs_digest(spec) != first


def test_reused_when_inputs_are_unchanged(tmp_path: Path) -> None:
    spec = wh.WheelhouseSpec(
        tmp_path / "wh", ROOT / "pyproject.toml", ROOT / "constraints.txt", ("linux/amd64",)
    )
    spec.directory.mkdir()
    (spec.directory / "inputs.sha256").write_text(wh.inputs_digest(spec) + "\n")

    report = ListReporter()
    # pip=["false"]: any download attempt would fail, so reuse is what made this pass
    assert wh.prepare(spec, report, pip=["false"]) is False
    assert "up to date, reused" in report.lines[0]


def test_unpinned_build_tool_is_refused(tmp_path: Path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("pytest==9.2.0\n")
    spec = wh.WheelhouseSpec(
        tmp_path / "wh",
        ROOT / "pyproject.toml",
        constraints,
        ("linux/amd64",),
        build_tools=("pytest", "setuptools"),
    )

    with pytest.raises(wh.WheelhouseError, match="setuptools==VERSION"):
        wh.prepare(spec, ListReporter(), pip=["false"])
