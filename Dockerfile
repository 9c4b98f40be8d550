# Three sidecar images from one file: `buildtool images build` (or `nox -s build`) drives it.
# See docs/images.md. Needs BuildKit (RUN --mount); works with the Dockerfile frontend built into
# Docker 20.10, so no `# syntax=` line: that would pull a frontend image from a registry.
#
# Offline by design: the host prepares ./wheelhouse (hash-pinned, `buildtool images wheelhouse`)
# and every pip install here runs with --no-index --require-hashes. No CA bundle enters a layer.

# A local image with python3, made by `buildtool images base` (debootstrap; never pulled). Another
# base must be named by digest (NAME@sha256:...): see docs/images.md.
ARG BASE_IMAGE=sidecar-forge/base:bookworm-slim

# ---- Python environment shared by every stage: pinned runtime dependencies, offline ----------
# The venv has no pip, setuptools or wheel: pip runs from its own (hash-checked) wheel in the
# wheelhouse. --no-compile, then one compileall pass with hash-based headers: pip's per-file
# timestamp .pyc made two clean builds differ; these are the same bytes every time.
FROM ${BASE_IMAGE} AS python-base
ENV PATH=/opt/venv/bin:${PATH} \
    PIP_NO_INDEX=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse \
    set -e; pip_whl=$(echo /wheelhouse/pip-*.whl) \
 && sum=$(sha256sum "$pip_whl") && grep -q "sha256:${sum%% *}" /wheelhouse/build.txt \
 && python3 -m venv --without-pip /opt/venv \
 && /opt/venv/bin/python "$pip_whl/pip" install --no-cache-dir --no-index --require-hashes \
        --no-compile --find-links /wheelhouse -r /wheelhouse/runtime.txt \
 && /opt/venv/bin/python -m compileall -q --invalidation-mode unchecked-hash /opt/venv/lib

# ---- Runtime base: the non-root user the sidecars run as --------------------------------------
FROM python-base AS runtime-base
# Numeric USER below, so orchestrators can verify non-root (runAsNonRoot) without /etc/passwd.
# Plain lines rather than useradd: useradd writes today's date (shadow) and backup files, so two
# builds on two days would differ; a nologin system user needs neither shadow entry nor home.
RUN echo 'sidecar:x:10001:' >> /etc/group \
 && echo 'sidecar:x:10001:10001:sidecar:/nonexistent:/usr/sbin/nologin' >> /etc/passwd
WORKDIR /srv

# ---- Tools: what the helper tests and the builder need on top (blake3, pytest, setuptools) --
FROM python-base AS tools
# No .pyc may land in the hashed workspace (their headers hold copy times).
ENV PYTHONDONTWRITEBYTECODE=1
RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse \
    set -e; pip_whl=$(echo /wheelhouse/pip-*.whl) \
 && /opt/venv/bin/python "$pip_whl/pip" install --no-cache-dir --no-index --require-hashes \
        --find-links /wheelhouse -r /wheelhouse/build.txt
WORKDIR /src

# ---- The cache helper's own regression tests (quick subset), before anything relies on it -----
# Only the helper's code and tests are copied here, so they re-run when those change, not on
# every parser edit. -B: no .pyc next to the sources. The project is not installed in this stage,
# so its pytest plugin (markers) is loaded by name.
FROM tools AS helper-tests
COPY pyproject.toml /src/
COPY buildtool/ /src/buildtool/
COPY tests/buildtool/cache/ /src/tests/buildtool/cache/
RUN python3 -B -m pytest -p no:cacheprovider -p buildtool.isolation.plugin -q \
        -m "not slow and not docker" \
        tests/buildtool/cache/test_cache_decision.py tests/buildtool/cache/test_cache_inputs.py \
        tests/buildtool/cache/test_cache_python.py \
 && touch /helper-tests.ok

# ---- Builder base: the workspace --------------------------------------------------------------
FROM tools AS builder-base
COPY . /src/

# ---- Builder: the one wheel that holds every sidecar -------------------------------------------
# The RUN goes through `buildtool cache-build`, which keeps its stamp on the cache mount: when the
# workspace bytes changed (even same size with an old mtime) it moves every input's mtime past the
# artifacts there, so setuptools rebuilds; when nothing changed the artifacts are reused
# (buildtool/images/artifact.py, which also checks the wheel declares every sidecar's console
# script). The mount is not part of the image, so the wheel is installed into an install tree
# kept on the mount (only changed files are replaced and byte-compiled: buildtool/images/install.py)
# and copied to /out (a root tree: /out/opt/venv/...), which each runtime target copies in one COPY.
# `--drop buildtool`: the build tool is in the wheel but the sidecar never imports it, so the images
# do not carry it. tests/buildtool/images/test_dockerfile.py rejects a builder without the helper, another
# cache id or another sharing mode.
FROM builder-base AS build-wheel
ARG TARGETARCH
COPY --from=helper-tests /helper-tests.ok /tmp/
RUN --mount=type=cache,id=sidecar-forge-${TARGETARCH}-inputs-v3,target=/cache,sharing=locked \
    python3 -B -m buildtool cache-build --workspace /src --cache /cache/wheel \
        --exclude wheelhouse/ --clean-on-removal /cache/wheel/build \
        -- python3 -B -m buildtool.images.artifact \
        --build-dir /cache/wheel/build --dist-dir /cache/wheel/dist \
 && python3 -B -m buildtool.images.install --wheel-dir /cache/wheel/dist --tree /cache/wheel/tree \
        --out /out --drop buildtool

# ---- Runtime targets ----------------------------------------------------------------------------
# Port 8080 inside the container (the sidecar default); HEALTHCHECK uses python3 (minbase has no curl).
FROM runtime-base AS sidecar-vllm
COPY --from=build-wheel /out/ /
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/live', timeout=2)"]
ENTRYPOINT ["sidecar-vllm", "--host", "0.0.0.0", "--port", "8080"]

FROM runtime-base AS sidecar-sglang
COPY --from=build-wheel /out/ /
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/live', timeout=2)"]
ENTRYPOINT ["sidecar-sglang", "--host", "0.0.0.0", "--port", "8080"]

FROM runtime-base AS sidecar-trtllm
COPY --from=build-wheel /out/ /
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/live', timeout=2)"]
ENTRYPOINT ["sidecar-trtllm", "--host", "0.0.0.0", "--port", "8080"]
