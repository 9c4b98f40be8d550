#!/usr/bin/env bash
# For the registry and second-daemon test (tests/buildtool/images/test_second_daemon.py) and its benchmark:
# Debian's docker-registry and iproute2. The test starts its own registry on 127.0.0.1 and its
# own second dockerd, and stops both; the package's own service is kept from starting (it would
# listen on every interface), so nothing is left running. Run as root; safe to run again.
set -euo pipefail

missing=()
for p in docker-registry iproute2; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-registry-test: installing ${missing[*]} (its service not started)"
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
  fi
  trap '[[ $made_policy == 1 ]] && rm -f "$policy"' EXIT
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "setup-registry-test: $(command -v docker-registry), $(command -v ip)"
