"""Run test suites inside a built sidecar image, on the Python and packages that ship.

`nox -s test-image` runs this (after `nox -s build`); `test_shipped_parsers.py` uses it for
the corpus comparison. The image is used as built: its interpreter (Debian 12's python3) and
its installed `parsers`, `sidecar` and runtime dependencies. What the suites need on top is
handed in read-only and put *after* the image's own packages on `sys.path` (a `.pth` file
written into the throwaway container), so no shipped module is ever shadowed:

- the test tools (pytest, pytest-xdist, hypothesis, httpx, openai, ...) as wheels for the
  image's platform and Python, installed into a host folder with `pip install --target`
  (versions from constraints.txt);
- `buildtool`, for the `isolated` plugin the routing suite runs on (the images drop it);
- `tests/`, `benchmarks/` (the bench outputs some parser tests read) and `pyproject.toml`
  (pytest's settings) under /srv; the project's sources are not there, so `import parsers`
  can only find the installed package. The run checks that first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # buildtool, when run as a script from a nox venv

from buildtool.images.daemon import Daemon, connect  # noqa: E402
from buildtool.images.targets import image_tag  # noqa: E402
from buildtool.images.wheelhouse import pip_platform_tags  # noqa: E402

DEFAULT_IMAGE = image_tag("sidecar-vllm")
SUITES = ("tests/parsers", "tests/sidecar")
# What the suites import beyond the image's runtime packages (the `test` extra's tools).
TEST_TOOLS = ("pytest", "pytest-xdist", "pytest-timeout", "hypothesis", "httpx", "openai")
TEST_TOOLS += ("transformers",)  # the reference renderer of chat templates
DEPS_CACHE = ROOT / ".reports" / "image-test-deps"
# Inside the container: the site-packages of the image's venv gets this `.pth` (appended
# to sys.path after the image's own packages), then the command runs.
PTH = "zz-sidecar-forge-test-tools.pth"
PREAMBLE = (
    "set -e; "
    "site=$(python3 -c \"import sysconfig; print(sysconfig.get_paths()['purelib'])\"); "
    f'printf "/opt/test-tools\\n/opt/test-deps\\n" > "$site/{PTH}"; '
)
# Fails the run when a shipped package would come from anywhere but the image's venv.
WHERE_FROM = (
    "import sys, sysconfig, parsers, sidecar; "
    "site = sysconfig.get_paths()['purelib']; "
    "bad = [m.__name__ for m in (parsers, sidecar) if not m.__file__.startswith(site)]; "
    "print('in-image python', sys.version.split()[0], 'packages from', site); "
    "sys.exit(f'not the installed package: {bad}' if bad else 0)"
)


def image_platform(daemon: Daemon, image: str) -> str:
    attrs = daemon.sdk.images.get(image).attrs
    return f"{attrs.get('Os', 'linux')}/{attrs['Architecture']}"


def tools_for(platform: str, dest: Path = DEPS_CACHE) -> Path:
    """The test tools for `platform` and Python 3.11 in `dest/<key>` (made once per key)."""
    constraints = ROOT / "constraints.txt"
    key = hashlib.sha256(
        json.dumps([platform, TEST_TOOLS, constraints.read_text()]).encode()
    ).hexdigest()[:16]
    folder = dest / key
    if (folder / ".complete").is_file():
        return folder
    partial = dest / f".{key}.partial"
    subprocess.run(["rm", "-rf", str(partial)], check=True)
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(partial)]
    argv += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    for tag in pip_platform_tags(platform):
        argv += ["--platform", tag]
    argv += ["-c", str(constraints), *TEST_TOOLS]
    print(f"in-image: installing the test tools for {platform} into {folder}", flush=True)
    subprocess.run(argv, check=True)
    (partial / ".complete").write_text("\n".join(TEST_TOOLS) + "\n")
    if folder.exists():
        subprocess.run(["rm", "-rf", str(folder)], check=True)
    partial.rename(folder)
    return folder


def run(
    daemon: Daemon,
    image: str,
    command: str,
    deps: Path,
    out: Path | None = None,
    env: dict[str, str] | None = None,
    echo: bool = True,
) -> tuple[int, str]:
    """Run the shell `command` in a throwaway container of `image` as described above; the
    exit status and the whole output. `out`, if given, is mounted writable at /out."""
    volumes: dict[str, dict[str, str]] = {
        str(ROOT / "tests"): {"bind": "/srv/tests", "mode": "ro"},
        str(ROOT / "pyproject.toml"): {"bind": "/srv/pyproject.toml", "mode": "ro"},
        # the parser tests read the bench's realistic outputs
        str(ROOT / "benchmarks"): {"bind": "/srv/benchmarks", "mode": "ro"},
        str(ROOT / "buildtool"): {"bind": "/opt/test-tools/buildtool", "mode": "ro"},
        str(deps): {"bind": "/opt/test-deps", "mode": "ro"},
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        volumes[str(out)] = {"bind": "/out", "mode": "rw"}
    container = daemon.sdk.containers.run(
        image,
        ["-c", PREAMBLE + f"python3 -c {_quote(WHERE_FROM)}; " + command],
        entrypoint="/bin/sh",
        user="0:0",
        working_dir="/srv",
        network_mode="host",  # the suites' servers listen on loopback only
        environment={"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", **(env or {})},
        volumes=volumes,
        detach=True,
    )
    chunks: list[str] = []
    try:
        for piece in container.logs(stream=True, follow=True):
            text = piece.decode(errors="replace")
            chunks.append(text)
            if echo:
                sys.stdout.write(text)
                sys.stdout.flush()
        status = int(container.wait(timeout=3600)["StatusCode"])
    finally:
        container.remove(force=True)
    return status, "".join(chunks)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def junit_counts(report: Path) -> dict[str, int]:
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in ET.parse(report).getroot().iter("testsuite"):
        for k in counts:
            counts[k] += int(suite.get(k, "0"))
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--image", default=DEFAULT_IMAGE, help=f"default {DEFAULT_IMAGE}")
    ap.add_argument("--workers", default="2", help="pytest-xdist workers (-n)")
    ap.add_argument("paths", nargs="*", default=list(SUITES), help="test paths under tests/")
    args = ap.parse_args(argv)
    daemon = connect(None, dict(os.environ))
    if daemon is None:
        print("in-image: no Docker daemon reachable (scripts/setup-host.sh starts one)")
        return 2
    if not daemon.image_exists(args.image):
        print(f"in-image: image {args.image} not found: build it first (nox -s build)")
        return 2
    deps = tools_for(image_platform(daemon, args.image))
    out = ROOT / ".reports" / "test-image"
    report = out / "junit.xml"
    report.unlink(missing_ok=True)
    paths = " ".join(_quote(p) for p in args.paths)
    pytest: list[Any] = ["python3 -m pytest -p no:cacheprovider -q -rfE"]
    pytest += [f"-n {_quote(args.workers)} --junitxml=/out/junit.xml {paths}"]
    status, _ = run(daemon, args.image, " ".join(pytest), deps, out=out)
    if not report.is_file():
        print(f"in-image: pytest wrote no report (exit status {status})")
        return status or 1
    counts = junit_counts(report)
    ran = counts["tests"] - counts["skipped"]
    print(
        f"in-image ({args.image}): {ran} ran, {counts['failures']} failed, "
        f"{counts['errors']} errors, {counts['skipped']} skipped; {' '.join(args.paths)}"
    )
    if ran == 0:
        print("in-image: no test ran: failing on purpose")
        return 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
