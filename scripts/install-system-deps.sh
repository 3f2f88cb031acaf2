#!/usr/bin/env bash
# Debian packages the integration tests start for real; installed only when missing.
#   promtool (package prometheus): back-fills simulator OpenMetrics into a TSDB block.
#   Slurm 22.05 with accounting (tests/slurm_harness): slurmctld, slurmd, slurmdbd,
#   slurm-client (sacct, sbatch, sacctmgr...), munge (munged, mungekey) and
#   mariadb-server (mariadbd, mariadb-install-db). The harness starts its own daemons
#   under a temp directory; none of them may start at install time (policy-rc.d below).
#   victoria-metrics: a second server speaking the Prometheus HTTP API (tests/support/victoria.py).
#   chromium: the HTML reports are loaded headless (via Playwright's Python driver, which
#   uses this binary: no browser download) and must render without console errors.
#   postgresql: the production Dagster instance (deploy/dagster.yaml) is tested against a real
#   PostgreSQL (tests/support/postgres.py: initdb into a temp directory, run as the `postgres` user).
#   redis-server: the Celery broker and result backend of the daily ingest on workers
#   (tests/support/redis.py starts its own on a loopback port; the package's service stays off).
set -euo pipefail
missing=()
need() {  # need COMMAND PACKAGE: install PACKAGE when COMMAND is not on the PATH
    command -v "$1" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1 \
        || missing+=("$2")
}
need promtool prometheus
need slurmctld slurmctld
need slurmd slurmd
need slurmdbd slurmdbd
need sacct slurm-client
need munged munge
need mariadb-install-db mariadb-server
need chromium chromium
need victoria-metrics victoria-metrics
need redis-server redis-server
# PostgreSQL's server binaries live in /usr/lib/postgresql/<major>/bin, off the PATH.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
echo "installing Debian packages for the integration tests: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
# Debian's prometheus, victoria-metrics, munge, mariadb, postgresql, redis and slurm packages would start daemons from their
# init scripts; a policy-rc.d that exits 101 stops that (removed again if we created it).
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee /usr/sbin/policy-rc.d >/dev/null
    $sudo_cmd chmod +x /usr/sbin/policy-rc.d
    trap '$sudo_cmd rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
