#!/usr/bin/env bash
# Install (if needed) and run the test suite on SQLite and PostgreSQL, the browser tests in
# Chromium, ruff, mypy (app, hourtab, incidents), `alembic check` (the models and the migrations
# agree) and the wheel smoke test (the built wheel, installed in a fresh venv, migrates, serves the
# demo and reads a CSV).
# The whole suite runs by default, CI included: the tests marked `slow` (servers in child processes,
# real training runs, crash and restart drills) are the ones that show the queue and the verdicts hold.
# --fast leaves them out while iterating. Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

marks=()
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then marks=(-m "not slow"); else args+=("$arg"); fi
done
scripts/install.sh --test

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "Starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

export WANDB_MODE=offline WANDB_SILENT=true WANDB_DISABLE_GIT=true
.venv/bin/ruff check .
# Typed throughout (configuration in pyproject.toml: which modules read as Any, and why).
.venv/bin/mypy

check_dir=$(mktemp -d)
HOURTAB_DATA_DIR="$check_dir" .venv/bin/hourtab db upgrade >/dev/null
HOURTAB_DATA_DIR="$check_dir" .venv/bin/alembic check
rm -rf "$check_dir"

scripts/wheel_smoke.sh

# Branch coverage of app, hourtab and incidents (configured in pyproject.toml), the files not fully
# covered printed; a whole run fails under the floor. 78 %: the fast SQLite tests of hourtab,
# incidents, app/cli and app/public alone reach 79 %, so the whole suite does at least that. --fast or pytest arguments (-k, a file) run fewer tests, so
# those runs report without the floor.
floor=(--cov-fail-under=78)
[ ${#marks[@]} -eq 0 ] && [ ${#args[@]} -eq 0 ] || floor=()
# A -m among the arguments comes last, so it replaces the default.
.venv/bin/python -m pytest -n 2 --dist loadgroup --cov --cov-report=term-missing:skip-covered "${floor[@]}" \
  "${marks[@]}" "${args[@]}"
