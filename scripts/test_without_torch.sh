#!/usr/bin/env bash
# The suite on a machine without the repro extra (no torch, no transformers): every test that needs
# them is marked `torch` and left out, and nothing else may fail for their absence. Builds a venv
# with only the dev extra in $NOTORCH_VENV (default /tmp/notorch) the first time. Other arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${NOTORCH_VENV:-/tmp/notorch}
if [ ! -x "$venv/bin/python" ]; then
  python3.11 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -e ".[dev]"
fi
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "$venv has torch installed; this check needs a venv without it" >&2
  exit 2
fi

export WANDB_MODE=offline WANDB_SILENT=true WANDB_DISABLE_GIT=true
PYTHONPATH=$PWD "$venv/bin/python" -m pytest -m "not torch and not slow" -n 0 -q -x "$@"
