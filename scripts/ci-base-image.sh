#!/usr/bin/env bash
# CI on GitHub: make the base image with debootstrap (never pulled: the project owns no registry
# name for it), publish it on a loopback registry started here (Ubuntu/Debian's docker-registry
# package), and export BASE_IMAGE=REGISTRY/sidecar-forge/base@sha256:... for the later steps: a
# buildx builder (docker-container driver) cannot see the daemon's local images, and BuildKit
# would otherwise look the name up on Docker Hub. Usage: ci-base-image.sh 127.0.0.1:PORT
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
registry=$1

config=$(mktemp)
printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n' \
  "${RUNNER_TEMP:-/tmp}/registry" "$registry" >"$config"
nohup docker-registry serve "$config" >"${RUNNER_TEMP:-/tmp}/registry.log" 2>&1 &
for _ in $(seq 1 30); do
  curl -fsS "http://$registry/v2/" >/dev/null 2>&1 && break
  sleep 1
done

python -m pip install -q -c constraints.txt -e ".[tool]"
# debootstrap needs root; the same interpreter and packages
sudo "$(command -v python)" -m buildtool images base
local_name=$(python -c 'from buildtool.images.targets import DEFAULT_BASE_IMAGE as b; print(b)')
remote="$registry/sidecar-forge/base:${local_name##*:}"
docker tag "$local_name" "$remote"
docker push -q "$remote"
pinned=$(docker inspect --format '{{index .RepoDigests 0}}' "$remote")
echo "ci-base-image: $pinned"
echo "BASE_IMAGE=$pinned" >>"${GITHUB_ENV:-/dev/stdout}"
