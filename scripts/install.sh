#!/usr/bin/env bash
# Install what HourTab needs on a fresh Debian 12 machine: system libraries (only when missing),
# a virtual environment in .venv, and the project. `--test` adds the test tools (Chromium, poppler,
# wrk), the CPU build of torch from this machine's local wheel, and the `dev` and `repro` extras.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-app}
# fonts-ipafont-gothic: the Japanese glyphs of a Japanese retainer's statement and invoice.
packages=(libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core fonts-ipafont-gothic)
if [ "$mode" = "--test" ]; then
  packages+=(chromium poppler-utils wrk)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "Installing system packages: ${missing[*]}"
  # scripts/apt_get.sh waits while another apt or dpkg holds the lock.
  $sudo scripts/apt_get.sh update -q >/dev/null
  $sudo env DEBIAN_FRONTEND=noninteractive scripts/apt_get.sh install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

python=$(command -v python3.11 || command -v python3)
[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=".venv/.installed-${mode#--}"
want="$(sha256sum pyproject.toml | cut -c1-64)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  if [ "$mode" = "--test" ]; then
    # The CPU build on local disk; installed first so no other torch is ever downloaded.
    .venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev,repro]"
  else
    .venv/bin/python -m pip install -q --disable-pip-version-check -e .
  fi
  echo "$want" > "$stamp"
fi
