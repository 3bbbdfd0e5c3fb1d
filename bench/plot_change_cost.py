"""Plot ``bench/change_cost.py --json`` results, before and after, as cost against history size.

    python bench/plot_change_cost.py BEFORE.json AFTER.json docs/change_cost.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHANGES = {"import_50": "50-row import", "no_change": "same file again", "terms_edit": "terms edit"}


def main() -> None:
    before, after = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    backends = list(after)
    fig, axes = plt.subplots(1, len(backends), figsize=(5.5 * len(backends), 4), squeeze=False)
    for ax, backend in zip(axes[0], backends, strict=True):
        for (key, label), color in zip(CHANGES.items(), ("C0", "C1", "C2"), strict=True):
            for results, style, when in ((before, "--", "before"), (after, "-", "after")):
                if backend not in results:
                    continue
                sizes = sorted(results[backend], key=int)
                ax.plot([int(s) for s in sizes], [results[backend][s][key] * 1000 for s in sizes], style,
                        color=color, marker="o", label=f"{label} ({when})")
        ax.set_xscale("symlog", linthresh=2000)
        ax.set_xlabel("entries of history (10 retainers)")
        ax.set_ylabel("ms per change (median)")
        ax.set_title(backend)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
