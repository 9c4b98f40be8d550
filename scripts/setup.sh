#!/usr/bin/env bash
# README's first command on a fresh Debian 12 machine (as root): set up everything, then build the
# three images (the main job). README's second command, `nox -s test`, runs the tests.
#
#   1. system packages and a running Docker daemon (scripts/setup-host.sh);
#   2. the pinned task runner: nox and uv (constraints.txt) in a venv this script makes, linked as
#      /usr/local/bin/nox. Debian's python3 is "externally managed" (PEP 668) and refuses
#      `pip install` outside a venv; Debian's own nox package is too old for the noxfile;
#   3. `nox -s build` (extra arguments are passed on: ./scripts/setup.sh --push REGISTRY/PREFIX).
#
# SIDECAR_FORGE_NO_ENGINE=1 skips the Docker daemon (a container without one: the build then
# makes the sidecars' wheels locally, see docs/images.md). SIDECAR_FORGE_TOOLS picks the venv
# folder (default /opt/sidecar-forge/tools). Safe to run again: what is in place is kept.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup-host.sh

tools=${SIDECAR_FORGE_TOOLS:-/opt/sidecar-forge/tools}
pinned() { sed -n "s/^$1==//p" constraints.txt; }
want_nox=$(pinned nox)
have_nox=$( (nox --version 2>&1 || true) | tail -n 1)
if [[ "$have_nox" == "$want_nox" ]]; then
  echo "setup: nox $have_nox already on PATH ($(command -v nox))"
else
  if [[ ! -x "$tools/bin/nox" ]] || [[ "$("$tools/bin/nox" --version 2>&1 | tail -n 1)" != "$want_nox" ]]; then
    echo "setup: installing nox $want_nox and uv $(pinned uv) into the venv $tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt nox uv
  fi
  ln -sf "$tools/bin/nox" /usr/local/bin/nox
  hash -r
  if [[ "$(command -v nox)" != /usr/local/bin/nox ]]; then
    echo "setup: warning: $(command -v nox) comes before /usr/local/bin/nox on PATH" >&2
  fi
  echo "setup: nox $(nox --version 2>&1 | tail -n 1) at $(command -v nox)"
fi

echo "setup: building the images (nox -s build)"
exec nox -s build -- "$@"
