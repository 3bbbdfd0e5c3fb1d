"""Plot ``bench/change_cost.py --json`` results, before and after, as cost against history size.

    python bench/plot_change_cost.py BEFORE.json AFTER.json docs/change_cost.png

One column per backend; the top row in-process (dashed: before, where the before run measured that
change), the bottom row the same changes through the CLI (after only) when the after run has them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHANGES = {"import_50": "50-row import", "no_change": "same file again", "sync_3": "3-entry sync",
           "sync_none": "no-change sync", "terms_edit": "terms edit"}
COLORS = ("C0", "C1", "C2", "C3", "C4")


def _curves(ax, runs: list[tuple[dict, str, str]], backend: str, prefix: str) -> None:
    for (key, label), color in zip(CHANGES.items(), COLORS, strict=True):
        for results, style, when in runs:
            sizes = sorted(results.get(backend, {}), key=int)
            if not sizes or prefix + key not in results[backend][sizes[0]]:
                continue
            ax.plot([int(s) for s in sizes], [results[backend][s][prefix + key] * 1000 for s in sizes], style,
                    color=color, marker="o", label=f"{label} ({when})")
    ax.set_xscale("symlog", linthresh=2000)
    ax.set_xlabel("entries of history (10 retainers)")
    ax.set_ylabel("ms per change (median)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)


def main() -> None:
    before, after = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    backends = list(after)
    cli = any("cli_import_50" in figures for b in backends for figures in after[b].values())
    fig, axes = plt.subplots(2 if cli else 1, len(backends), figsize=(5.5 * len(backends), 8 if cli else 4),
                             squeeze=False)
    for column, backend in enumerate(backends):
        _curves(axes[0][column], [(before, "--", "before"), (after, "-", "after")], backend, "")
        axes[0][column].set_title(f"{backend}, in-process")
        if cli:
            _curves(axes[1][column], [(after, "-", "after")], backend, "cli_")
            axes[1][column].set_title(f"{backend}, through the CLI (a process each)")
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
