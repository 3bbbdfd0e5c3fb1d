#!/usr/bin/env bash
# Build the wheel, install it (not editable) into a fresh virtual environment, and check from
# outside the checkout that the installed `hourtab` migrates a database, serves the demo, reads a
# sample CSV and builds an incident, using only what the wheel carries.
#
# Dependencies: by default the fresh venv sees the test venv's installed packages through a .pth
# line (fast, offline; the test venv's own .pth files, such as its editable install, are not read).
# WHEEL_SMOKE_DEPS=registry installs the wheel with its dependencies from the package index instead.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

.venv/bin/python -m pip wheel -q --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/hourtab-*.whl)
.venv/bin/python -m venv "$work/venv"
py="$work/venv/bin/python"
if [ "${WHEEL_SMOKE_DEPS:-reuse}" = "registry" ]; then
  "$py" -m pip install -q "$wheel"
else
  "$py" -m pip install -q --no-deps --no-index "$wheel"
  deps=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  venv_site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$deps" > "$venv_site/_hourtab_smoke_deps.pth"
fi

cd "$work"  # nothing from the checkout on sys.path from here on
export HOURTAB_DATA_DIR="$work/data" WANDB_MODE=offline WANDB_SILENT=true
unset HOURTAB_DATABASE_URL DATABASE_URL
hourtab="$work/venv/bin/hourtab"

"$py" - "$repo" <<'PY'
import sys
from pathlib import Path

import app, hourtab, incidents
from hourtab.core.resources import resource_path

repo = Path(sys.argv[1]).resolve()
for module in (app, hourtab, incidents):
    assert repo not in Path(module.__file__).resolve().parents, f"{module.__name__} imported from the checkout"
for name in ("templates", "migrations", "alembic.ini"):
    assert "_data" in resource_path(name).parts and resource_path(name).exists(), name
# The client's languages: the compiled catalogs travel inside the package.
from hourtab.core.i18n import locale_dir, translations_for
assert repo not in locale_dir().resolve().parents, "catalogs read from the checkout"
assert translations_for("de").gettext("Previous periods") == "Frühere Zeiträume"
assert translations_for("ja").gettext("Previous periods") == "過去の期間"
PY

"$py" "$repo/scripts/wheel_deps.py"
"$hourtab" db upgrade
sample=$("$py" -c 'from importlib.resources import files; print(files("hourtab.timesheets") / "samples" / "toggl_floresfdev_2017-08.csv")')
"$hourtab" csv inspect "$sample" > "$work/inspect.txt"  # to a file: grep -q would close a pipe early
grep -q "217 entries of 217 rows" "$work/inspect.txt"

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export HOURTAB_PUBLIC_URL="http://127.0.0.1:$port"
"$hourtab" serve --demo --port "$port" --workers 1 > "$work/serve.log" 2>&1 &
server=$!
"$py" - "$port" <<'PY'
import sys, time, urllib.request

# /healthz says "degraded" while the demo's job waits for the consumer that is still starting:
# wait for "ok" (the consumer took it or registered), not merely for an answer.
deadline = time.monotonic() + 120
body = b""
while b'"status":"ok"' not in body:
    if time.monotonic() > deadline:
        sys.exit(f"hourtab serve --demo did not report a healthy queue on /healthz: {body!r}")
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2).read()
    except OSError:
        pass
    time.sleep(0.5)
page = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/login", timeout=10).read().decode()
assert "<form" in page, page[:500]
PY
grep -q "Demo login: demo@hourtab.example / " "$work/serve.log"
# The demo's sample data loads as a job on the server's consumer: wait for its retainer.
for _ in $(seq 1 120); do
  "$hourtab" ledger 2 --json > "$work/ledger.json" 2>/dev/null && break
  sleep 1
done
url=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["public_url"])' "$work/ledger.json")
"$py" -c 'import sys, urllib.request; assert b"MLOps platform retainer" in urllib.request.urlopen(sys.argv[1], timeout=30).read()' "$url"
# The calendar and the API's description (a file the wheel must carry) are served from the wheel too.
"$py" -c 'import sys, urllib.request as u; assert u.urlopen(sys.argv[1] + ".ics", timeout=30).read().startswith(b"BEGIN:VCALENDAR"); assert b"openapi: 3.1" in u.urlopen(sys.argv[2], timeout=10).read()' "$url" "$HOURTAB_PUBLIC_URL/api/v1/openapi.yaml"
kill "$server"; wait "$server" 2>/dev/null || true; server=""

echo "a smoke-test password" | "$hourtab" user create smoke@example.com --password-stdin >/dev/null
run=$("$py" -c 'from incidents.evidence.sample_data import repro_tiny_runs; print(repro_tiny_runs()["watch:all:1"])')
"$hourtab" incident build --account smoke@example.com --title "Wheel smoke" --run "incident=$run" \
  --pdf "$work/incident.pdf" --json > "$work/incident.json"
"$py" -c 'import json, sys; assert json.load(open(sys.argv[1]))["id"]' "$work/incident.json"
[ "$(head -c 5 "$work/incident.pdf")" = "%PDF-" ]
echo "wheel smoke test passed: $(basename "$wheel")"
