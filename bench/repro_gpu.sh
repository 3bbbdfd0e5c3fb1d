#!/usr/bin/env bash
# Reproducer on a CUDA machine (issue 6): bert-base, the three default modes, writes profile.json.
#
#   bench/repro_gpu.sh [OUT_DIR]          # default OUT_DIR: repro-gpu-<hostname>-<date>
#
# Budget: under 8 minutes on one GPU. 120 measured steps so watch:gradients:100 reaches a logging
# step (log_freq counts hook calls); batch 32 x seq 128 is a common BERT fine-tuning shape (override
# with BATCH / SEQ; MODES and ROUNDS pass --modes and --rounds). Every figure comes from this run on this
# machine; profile.md names the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-repro-gpu-$(hostname)-$(date +%Y%m%d-%H%M%S)}"
BATCH="${BATCH:-32}"
SEQ="${SEQ:-128}"
STEPS="${STEPS:-120}"
MODES="${MODES:-baseline,watch:all:1,watch:gradients:100}"
ROUNDS="${ROUNDS:-1}"
if [ -f .venv/bin/activate ]; then . .venv/bin/activate; fi
python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("repro_gpu.sh: torch sees no CUDA device here (torch " + torch.__version__ + ").")
print("GPU:", torch.cuda.get_device_name(0), "| torch", torch.__version__)
PY
export WANDB_SILENT=true
start=$(date +%s)
timeout 480 hourtab repro --preset bert-base --device cuda --batch-size "$BATCH" --seq-len "$SEQ" \
  --steps "$STEPS" --warmup 5 --profile-steps 2 --modes "$MODES" --rounds "$ROUNDS" --no-progress --out "$OUT"
echo "repro_gpu.sh: $(( $(date +%s) - start )) s; wrote $OUT/profile.json and $OUT/profile.md"
cat "$OUT/profile.md"
