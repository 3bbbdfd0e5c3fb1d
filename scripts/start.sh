#!/usr/bin/env bash
# Install (if needed) and start HourTab on SQLite with the demo account and sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
export HOURTAB_DATA_DIR=${HOURTAB_DATA_DIR:-$PWD/instance}
exec .venv/bin/hourtab serve --demo --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" "$@"
