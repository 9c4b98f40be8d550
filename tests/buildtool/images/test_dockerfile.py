"""The real Dockerfile keeps every builder behind the stamp; each way to break that is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildtool.images import dockerfile as df
from buildtool.images.targets import BUILDER_STAGE, CACHE_ID_TEMPLATE, TARGETS

ROOT = Path(__file__).resolve().parents[3]
TEXT = (ROOT / "Dockerfile").read_text()


def test_the_dockerfile_is_sound() -> None:
    assert df.check(TEXT) == []


def test_one_builder_on_one_cache_mount_per_architecture() -> None:
    builders = df.builder_stages(df.stages(TEXT))
    assert [s.name for s in builders] == [BUILDER_STAGE] == ["build-wheel"]
    ids = set()
    for stage in builders:
        runs = [i for i in stage.instructions if i.keyword == "RUN"]
        assert runs, stage.name
        for run in runs:
            mounts, command = df.run_mounts(run.args)
            caches = [m for m in mounts if m.get("type") == "cache"]
            assert len(caches) == 1
            ids.add(caches[0]["id"])
            assert caches[0]["sharing"] == "locked"
            assert df.runs_helper_first(command)
            # the artifact step checks every sidecar's console script: no --sidecar narrows it
            assert df.helper_command(command)[:5] == [
                "python3",
                "-B",
                "-m",
                "buildtool.images.artifact",
                "--build-dir",
            ]
    assert ids == {CACHE_ID_TEMPLATE} == {"sidecar-forge-${TARGETARCH}-inputs-v3"}


def test_base_image_arg_and_offline_installs() -> None:
    first = df.instructions(TEXT)[0]
    assert first.keyword == "ARG" and first.args.startswith("BASE_IMAGE")
    for instr in df.instructions(TEXT):
        if instr.keyword == "RUN" and "pip install" in instr.args:
            assert "--no-index" in instr.args, instr.line
    assert "ca-certificates.crt" not in TEXT and "type=secret" not in TEXT


def test_helper_tests_run_with_python3_dash_b_before_the_builders() -> None:
    stages = {s.name: s for s in df.stages(TEXT)}
    run = next(i for i in stages["helper-tests"].instructions if i.keyword == "RUN")
    assert run.args.startswith("python3 -B -m pytest")
    assert any("--from=helper-tests" in i.args for i in stages[BUILDER_STAGE].instructions)


def test_helper_test_files_named_in_the_dockerfile_exist() -> None:
    stages = {s.name: s for s in df.stages(TEXT)}
    run = next(i for i in stages["helper-tests"].instructions if i.keyword == "RUN")
    files = [w for w in run.args.split() if w.startswith("tests/") and w.endswith(".py")]
    assert files, run.args
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, f"Dockerfile helper-tests names missing test files: {missing}"
    copied = [i.args.split()[0] for i in stages["helper-tests"].instructions if i.keyword == "COPY"]
    for f in files:
        assert any(f.startswith(c) for c in copied), f"{f} is not copied into helper-tests"


def test_runtime_targets() -> None:
    stages = {s.name: s for s in df.stages(TEXT)}
    for target in TARGETS:
        by_kw = {i.keyword: i.args for i in stages[target].instructions}
        assert by_kw["USER"] == "10001:10001"
        assert by_kw["EXPOSE"] == "8080"
        assert "/live" in by_kw["HEALTHCHECK"] and "python3" in by_kw["HEALTHCHECK"]
        assert by_kw["ENTRYPOINT"].startswith(f'["{target}"')
        assert by_kw["COPY"] == f"--from={BUILDER_STAGE} /out/ /"


BUILDER_RUN = "python3 -B -m buildtool cache-build --workspace /src --cache /cache/wheel"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "-inputs-v3,target=/cache",
            "-inputs-v2,target=/cache",
            "must be 'sidecar-forge-${TARGETARCH}-inputs-v3'",
        ),
        ("id=sidecar-forge-${TARGETARCH}-inputs-v3", "id=vllm-private", "cache id 'vllm-private'"),
        ("sharing=locked", "sharing=shared", "cache sharing 'shared'"),
        (",sharing=locked", "", "cache sharing None"),
        (
            BUILDER_RUN,
            "python3 -m pip wheel --wheel-dir /cache/wheel /src && true",
            "without `python3 -B -m buildtool cache-build`",
        ),
        ("ARG TARGETARCH\n", "", "without `ARG TARGETARCH`"),
        (
            "python3 -B -m buildtool cache-build",
            "python3 -m buildtool cache-build",
            "without `python3 -B",
        ),
        ("from=build-wheel", "from=builder-base", "not a builder stage"),
        ("AS build-wheel", "AS build-all", "no builder stage `build-wheel`"),
        ("USER 10001:10001\n", "USER root\n", "runs as root"),
        ("HEALTHCHECK --interval", "LABEL x=y\n# --interval", "no HEALTHCHECK"),
    ],
)
def test_each_violation_is_caught(old: str, new: str, expected: str) -> None:
    assert old in TEXT
    problems = df.check(TEXT.replace(old, new, 1))
    assert any(expected in p for p in problems), problems


def test_a_new_builder_stage_that_bypasses_the_helper_is_caught() -> None:
    extra = (
        "\nFROM builder-base AS build-tgi\n"
        "RUN --mount=type=cache,id=sidecar-forge-${TARGETARCH}-inputs-v3,"
        "target=/cache,sharing=locked \\\n"
        "    python3 -m pip wheel --no-deps -w /out /src\n"
    )
    problems = df.check(TEXT + extra)
    assert any("stage build-tgi" in p and "without" in p for p in problems), problems
    assert any("ARG TARGETARCH" in p for p in problems)


def test_a_cache_mount_in_a_non_builder_stage_makes_it_a_builder() -> None:
    sneaky = TEXT.replace(
        "RUN echo 'sidecar:x:10001:'",
        "RUN --mount=type=cache,id=wheels,target=/w pip wheel -w /w /src\n"
        "RUN echo 'sidecar:x:10001:'",
        1,
    )
    assert sneaky != TEXT
    problems = df.check(sneaky)
    assert any("stage runtime-base" in p for p in problems), problems
