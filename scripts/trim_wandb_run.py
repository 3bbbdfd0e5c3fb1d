"""Trim a W&B run folder to the records HourTab reads (for tests/data/runs, the corpus of real runs).

    python scripts/trim_wandb_run.py SOURCE_RUN_FOLDER DEST_FOLDER

What is kept and why: incidents/evidence/wandb/trim.py. Prints the bytes and records kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from incidents.evidence.wandb.trim import TrimLimits, trim_run_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a run folder (run-*, offline-run-*, or a wandb 0.8 run folder)")
    parser.add_argument("dest", type=Path, help="where the trimmed copy goes (created)")
    parser.add_argument("--rows", type=int, default=TrimLimits.rows, help="history rows to keep at most (default %(default)s)")
    parser.add_argument("--histogram-steps", type=int, default=None,
                        help="keep histograms at this many evenly spaced logged steps (default: all)")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"{args.source} is not a folder", file=sys.stderr)
        return 2
    done = trim_run_folder(args.source, args.dest, TrimLimits(rows=args.rows, histogram_steps=args.histogram_steps))
    dropped = ", ".join(f"{n} {kind}" for kind, n in sorted(done.dropped.items())) or "nothing"
    print(f"{args.dest}: {done.bytes_in:,} → {done.bytes_out:,} bytes; {done.rows_in:,} → {done.rows_out:,} "
          f"history rows (dropped {dropped})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
