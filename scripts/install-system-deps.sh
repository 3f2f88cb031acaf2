#!/usr/bin/env bash
# Debian packages the integration tests start for real; installed only when missing.
#   promtool (package prometheus): back-fills simulator OpenMetrics into a TSDB block.
set -euo pipefail
missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
echo "installing Debian packages for the integration tests: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
# Debian's prometheus package would start a server from its init script; policy-rc.d stops that.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee /usr/sbin/policy-rc.d >/dev/null
    $sudo_cmd chmod +x /usr/sbin/policy-rc.d
    trap '$sudo_cmd rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
