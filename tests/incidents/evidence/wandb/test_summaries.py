"""Steady-state GPU utilisation, step rates, projections, min/max downsampling."""

from __future__ import annotations

import numpy as np
import pandas as pd

from incidents.evidence.wandb.downsample import minmax
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.frames import with_step_time
from incidents.evidence.wandb.summaries import per_gpu_utilisation, summarise_run


def _system(util: np.ndarray) -> pd.DataFrame:
    t = 1_700_000_000 + np.arange(len(util), dtype=float)
    return pd.DataFrame({"_runtime": t - t[0], "system.gpu.0.gpu": util, "system.gpu.1.gpu": 100 - util},
                        index=pd.Index(t, name="_timestamp"))


def test_gpu_utilisation_excludes_edges_and_reports_low_share():
    util = np.full(100, 80.0)
    util[:5] = 0.0             # warm-up: excluded
    util[95:] = 0.0            # shutdown: excluded
    util[50:60] = 10.0         # a stall in the steady state
    gpus = per_gpu_utilisation(_system(util))
    assert set(gpus) == {"0", "1"}
    g = gpus["0"]
    steady = util[5:95] if g.samples == 90 else util[np.r_[5:95]]
    assert g.samples in (89, 90, 91)
    assert abs(g.mean - steady.mean()) < 1.0 and g.median == 80.0
    assert g.p10 == np.percentile(util[5:95], 10) or g.p10 <= 80.0
    assert abs(g.share_below_50 - 10 / g.samples) < 1e-9
    no_edges = per_gpu_utilisation(_system(util), edge_fraction=0.0)["0"]
    assert no_edges.samples == 100 and no_edges.mean < g.mean


def test_steps_per_second_and_median_step_time():
    steps = np.arange(0, 1000)
    runtime = 60.0 + steps * 0.5                       # 60 s start-up, then 0.5 s a step
    history = with_step_time(pd.DataFrame({"_runtime": runtime}, index=pd.Index(steps, name="_step")))
    run = RunEvidence(history=history, runtime_s=float(runtime[-1]) + 30.0)   # 30 s after the last step
    s = summarise_run(run)
    assert abs(s.steps_per_s - 2.0) < 1e-9 and abs(s.median_step_time_s - 0.5) < 1e-9


def test_minmax_downsampling_keeps_every_spike():
    rng = np.random.default_rng(0)
    y = rng.normal(50, 1, 1_000_000)
    spikes = rng.choice(len(y), 40, replace=False)
    y[spikes] = 1000.0
    y[123_456] = -500.0
    x = np.arange(len(y), dtype=float)
    dx, dy = minmax(x, y, 2000)
    assert len(dy) <= 2000 and np.all(np.diff(dx) > 0)
    # every spike's bucket (1,000 points wide) still shows the spike's height
    kept_spikes = dx[dy == 1000.0]
    assert all(np.abs(kept_spikes - s).min() < 1000 for s in spikes)
    assert -500.0 in dy and dx[dy == -500.0][0] == 123_456
    small_x, small_y = minmax(x[:10], y[:10])
    assert np.array_equal(small_y, y[:10])
