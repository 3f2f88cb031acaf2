#!/usr/bin/env bash
# Create the virtual environment; on Debian, python3 -m venv needs the python3-venv package.
set -euo pipefail
python=${1:-python3}
venv=${2:-.venv}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "cardhours needs Python 3.11 or newer; $python is $("$python" --version 2>&1)" >&2
    exit 1
fi
if "$python" -m venv "$venv" 2>/dev/null; then
    exit 0
fi
rm -rf "$venv"
echo "python venv is missing (Debian package python3-venv); installing it" >&2
ver=$("$python" -c 'import sys; print(f"{sys.version_info.major}.{sys.version_info.minor}")')
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq "python${ver}-venv" || $sudo_cmd apt-get install -y -qq python3-venv
"$python" -m venv "$venv"
