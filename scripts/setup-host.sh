#!/usr/bin/env bash
# Host set-up for a fresh Debian 12 machine (run as root): system packages, then a running
# Docker daemon with BuildKit. Safe to run again: installed packages and a live daemon are kept.
set -euo pipefail

# python3-venv: scripts/setup.sh makes the task runner's venv (Debian's python3 is externally
# managed). make, gcc and libc6-dev: the make cache tests build C. util-linux (setpriv) is
# essential in Debian, so always there. SIDECAR_FORGE_NO_ENGINE=1: no Docker daemon (a
# container without one).
no_engine=${SIDECAR_FORGE_NO_ENGINE:-0}
packages=(debootstrap b3sum shellcheck make gcc libc6-dev git python3-venv)
[[ "$no_engine" == 1 ]] || packages+=(docker.io)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-host: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
command -v cargo >/dev/null || echo "setup-host: warning: cargo not on PATH; the cargo cache tests need it" >&2

if [[ "$no_engine" == 1 ]]; then
  echo "setup-host: SIDECAR_FORGE_NO_ENGINE=1: no Docker daemon set up"
  exit 0
fi
# Debian's 20.10 client has BuildKit built in; a newer `docker` earlier on PATH may not.
if ! /usr/bin/docker info >/dev/null 2>&1; then
  echo "setup-host: starting dockerd (log: /var/log/dockerd.log)"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    /usr/bin/docker info >/dev/null 2>&1 && break
    sleep 1
  done
  /usr/bin/docker info >/dev/null 2>&1 || { echo "setup-host: dockerd did not start; see /var/log/dockerd.log" >&2; exit 1; }
fi
echo "setup-host: docker daemon $(/usr/bin/docker version -f '{{.Server.Version}}') is running"
