"""Real builds on a real BuildKit: new bytes always ship, and nothing is rebuilt for no change.

Each test works on a copy of the workspace in a temporary folder (the checkout is never edited)
and tags its images with a unique tag, removed afterwards. The edit is the one mtime-based tools
get wrong: same size, and an mtime older than the artifacts kept on the cache mount.
"""

from __future__ import annotations

import os
import re
import secrets
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from images_support import build_images, build_log_steps, copy_workspace, read_in_image

from buildtool.images import client as bk
from buildtool.images.artifact import MARKER, REUSED
from buildtool.images.build import BuildOptions, build_argv, build_env, run_build
from buildtool.images.daemon import Daemon
from buildtool.images.targets import BUILDER_STAGE, DEFAULT_BASE_IMAGE, TARGETS, image_tag
from buildtool.images.ui import ListReporter

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EDITED = "parsers/errors.py"
MODULE = "parsers.errors"
TWO_HOURS_NS = 2 * 3600 * 10**9
PREFIX = "sidecar-forge-test"


def same_size_edit(path: Path) -> str:
    """Replace 8 characters of the module docstring with a fresh token: same size, still valid."""
    text = path.read_text()
    start = text.index('"""') + 3
    old = text[start : start + 8]
    assert old.isprintable() and '"' not in old and "\\" not in old, old
    token = "".join(secrets.choice(string.ascii_uppercase) for _ in range(8))
    new = text[:start] + token + text[start + 8 :]
    assert len(new.encode()) == len(text.encode())
    path.write_text(new)
    return new


@pytest.fixture
def tag(daemon: Daemon) -> Iterator[str]:
    value = "t" + secrets.token_hex(4)
    yield value
    for target in TARGETS:
        name = image_tag(target, PREFIX, value)
        if daemon.image_exists(name):
            daemon.sdk.images.remove(name, force=True)


def test_same_size_edits_with_old_mtimes_ship_the_new_bytes(
    daemon: Daemon, tmp_path: Path, tag: str
) -> None:
    ws = copy_workspace(tmp_path / "ws")
    args = ("--tag-prefix", PREFIX, "--tag", tag, "--context-dir", str(tmp_path / "ctx"))
    build_images(ws, *args)
    path = ws / EDITED
    original = path.stat()

    # 1: an mtime two hours older than the artifacts the builder keeps on the cache mount
    new = same_size_edit(path)
    os.utime(path, ns=(original.st_atime_ns, original.st_mtime_ns - TWO_HOURS_NS))
    build_images(ws, *args)
    built = []
    for target in TARGETS:
        assert read_in_image(daemon, image_tag(target, PREFIX, tag), MODULE) == new, target
        builders = [s for s in build_log_steps(ws, target) if s.stage == BUILDER_STAGE]
        lines = [line for s in builders for line in s.output]
        assert builders, f"{target}: no builder step in the log"
        if any(MARKER in line for line in lines):
            built.append(target)
        else:  # one builder serves every target: after the first, BuildKit's cache answers
            assert all(s.status == "cached" for s in builders), [
                (s.name, s.status) for s in builders
            ]
            assert not any(REUSED in line for line in lines), target
    assert built == [TARGETS[0]]

    # 2: same size again, mtime put back to exactly what BuildKit saw last time
    before = path.stat()
    newer = same_size_edit(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    build_images(ws, *args)
    for target in TARGETS:
        assert read_in_image(daemon, image_tag(target, PREFIX, tag), MODULE) == newer, target


def test_no_change_rebuild_runs_no_builder_command(
    daemon: Daemon, tmp_path: Path, tag: str
) -> None:
    ws = copy_workspace(tmp_path / "ws")
    args = ("--tag-prefix", PREFIX, "--tag", tag, "--context-dir", str(tmp_path / "ctx"))
    build_images(ws, *args)
    done = build_images(ws, *args)
    for target in TARGETS:
        steps = build_log_steps(ws, target)
        builders = [s for s in steps if s.stage == BUILDER_STAGE]
        runs = [s for s in builders if s.keyword == "RUN"]
        assert runs, f"{target}: no builder RUN step in the log"
        assert all(s.status == "cached" for s in builders), [(s.name, s.status) for s in builders]
        outputs = [line for s in steps for line in s.output]
        assert not any(MARKER in line or "buildtool cache-build:" in line for line in outputs)
    # the summary says so too: every instruction step of every image came from the cache
    for target in TARGETS:
        row = next(
            line for line in done.stdout.splitlines() if image_tag(target, PREFIX, tag) in line
        )
        match = re.search(r"(\d+)/(\d+)", row)
        assert match is not None and match[1] == match[2], row


def _variant_without_helper(text: str, cache_id: str) -> str:
    """The builder running the same build command directly, on its own cache mount."""
    old_id = "id=sidecar-forge-${TARGETARCH}-inputs-v3"
    start = text.index(f"FROM builder-base AS {BUILDER_STAGE}")
    end = text.index("# ---- Runtime targets")
    stage = text[start:end]
    stage = stage.replace(old_id, f"id={cache_id}")
    # drop the helper and its options: the build command after `--` then runs directly
    stage = re.sub(r"python3 -B -m buildtool cache-build .*? -- ", "", stage, count=1, flags=re.S)
    assert "cache-build" not in stage, stage
    return text[:start] + stage + text[end:]


def _direct_build(daemon: Daemon, ws: Path, dockerfile: str, tag: str) -> None:
    """Build straight from `ws` (no synced context), so the edited file's old mtime reaches /src."""
    environ = dict(os.environ)
    found = bk.find_client(environ)
    (ws / "Dockerfile").write_text(dockerfile)
    options = BuildOptions(
        workspace=ws,
        context_dir=ws,
        log_dir=ws / ".reports" / "images",
        targets=("sidecar-vllm",),
        base_image=DEFAULT_BASE_IMAGE,
        tag_prefix=PREFIX,
        tag=tag,
    )
    argv = build_argv(found, options, "sidecar-vllm")
    rc, _ = run_build(argv, build_env(found, environ), ws / "direct.log", "vllm", ListReporter())
    assert rc == 0, (ws / "direct.log").read_text()[-3000:]


def test_without_the_helper_the_builder_ships_stale_bytes(
    daemon: Daemon, sidecar_images: dict[str, str], tmp_path: Path, tag: str
) -> None:
    """Proves the problem exists (same builder, no stamp), then that the helper fixes it."""
    ws = copy_workspace(tmp_path / "ws")
    real = (ws / "Dockerfile").read_text()
    private_cache = f"sidecar-forge-test-{secrets.token_hex(4)}-${{TARGETARCH}}"
    variant = _variant_without_helper(real, private_cache)
    path = ws / EDITED
    original_text = path.read_text()
    original = path.stat()
    name = image_tag("sidecar-vllm", PREFIX, tag)

    _direct_build(daemon, ws, variant, tag)  # artifacts on the mount, mtimes of the checkout
    same_size_edit(path)
    os.utime(path, ns=(original.st_atime_ns, original.st_mtime_ns - TWO_HOURS_NS))
    _direct_build(daemon, ws, variant, tag)
    assert read_in_image(daemon, name, MODULE) == original_text  # stale: setuptools skipped it

    _direct_build(daemon, ws, real, tag)  # same inputs, builder behind the helper
    assert read_in_image(daemon, name, MODULE) == path.read_text() != original_text


def test_building_straight_from_a_checkout_misses_a_restored_mtime_edit(
    daemon: Daemon, sidecar_images: dict[str, str], tmp_path: Path, tag: str
) -> None:
    """Why builds go through the synced context: BuildKit's context transfer compares size and
    mtime with its last copy, so a same-size edit with the mtime put back is never sent."""
    ws = copy_workspace(tmp_path / "ws")
    real = (ws / "Dockerfile").read_text()
    path = ws / EDITED
    original_text = path.read_text()
    name = image_tag("sidecar-vllm", PREFIX, tag)

    _direct_build(daemon, ws, real, tag)
    before = path.stat()
    edited = same_size_edit(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # exactly as BuildKit saw it
    _direct_build(daemon, ws, real, tag)
    assert read_in_image(daemon, name, MODULE) == original_text  # stale: never transferred

    args = ("--tag-prefix", PREFIX, "--tag", tag, "--context-dir", str(tmp_path / "ctx"))
    build_images(ws, *args, "sidecar-vllm")  # the tool's content-synced context
    assert read_in_image(daemon, name, MODULE) == edited
