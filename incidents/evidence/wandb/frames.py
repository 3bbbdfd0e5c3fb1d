"""The frames of a RunEvidence, assembled from what a reader collected.

``history_frame`` and ``system_frame`` turn :class:`~incidents.evidence.wandb.columns.Columns`
into frames (one block per column, the buffers themselves when released); ``with_step_time`` and
``histogram_frame`` serve every reader (``.wandb`` files, API exports, chart CSVs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from incidents.evidence.wandb.columns import Columns
from incidents.evidence.wandb.evidence import HISTOGRAM_COLUMNS, empty_histograms


def histogram_frame(rows: list[tuple]) -> pd.DataFrame:
    if not rows:
        return empty_histograms()
    frame = pd.DataFrame.from_records(rows, columns=HISTOGRAM_COLUMNS)
    frame["step"] = frame["step"].astype("int64")
    return frame


def history_frame(cols: Columns, release: bool = False) -> pd.DataFrame:
    steps, arrays = cols.arrays(release=release)
    if len(steps) > 1 and not (steps[1:] > steps[:-1]).all():
        order = np.argsort(steps, kind="stable")
        steps = steps[order]
        for name in arrays:                 # one column at a time: a second copy of one, not of all
            arrays[name] = arrays[name][order]
    columns = {name: arrays.pop(name) for name in sorted(arrays, key=lambda c: (not c.startswith("_"), c))}
    index = pd.Index(steps, name="_step")
    if len(steps) > 1 and not (steps[1:] > steps[:-1]).all():
        # The same step logged twice (a resumed run): per metric, the last value logged for it wins.
        return with_step_time(pd.DataFrame(columns, index=index, copy=False).groupby(level=0).last())
    columns["step_time_s"] = step_times(steps, columns.get("_runtime", columns.get("_timestamp")))
    # One block per column, the buffers themselves: no consolidation copy of the whole history.
    return pd.DataFrame(columns, index=index, copy=False)


def with_step_time(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``step_time_s``: wall-clock seconds per step between consecutive logged steps."""
    clock = "_runtime" if "_runtime" in frame else "_timestamp" if "_timestamp" in frame else None
    frame["step_time_s"] = step_times(frame.index.to_numpy(), None if clock is None else frame[clock].to_numpy())
    return frame


def step_times(steps: np.ndarray, clock: np.ndarray | None) -> np.ndarray:
    """Seconds per step between consecutive rows of ``clock`` (``_runtime`` or ``_timestamp``); NaN first."""
    if clock is None or len(steps) < 2:
        return np.full(len(steps), np.nan)
    t = np.asarray(clock, dtype=np.float64)
    dt_ = np.diff(t)
    ds = np.diff(np.asarray(steps, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(ds > 0, dt_ / ds, np.nan)
    return np.concatenate([[np.nan], per])


def system_frame(cols: Columns, release: bool = False) -> pd.DataFrame:
    index, arrays = cols.arrays(release=release)
    frame = pd.DataFrame(dict(sorted(arrays.items())), index=pd.Index(index, name="_timestamp"), copy=False)
    if not frame.index.is_monotonic_increasing:
        frame = frame.sort_index()
    return frame
