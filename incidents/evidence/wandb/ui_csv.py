"""The W&B UI's chart "Export CSV": one x column, then ``<run> - <metric>`` columns per run.

Layout: ``Step`` (or the chart's x-axis, e.g. ``epoch``), then for each run ``"<run name> - <metric>"``
and optionally ``"… - <metric>__MIN"`` / ``"… - <metric>__MAX"`` (the band of sampled points);
grouped runs appear as ``"Group: <name> - <metric>"``. Cells are empty where a run has no value.
Each run (or group) in the file becomes its own RunEvidence.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from charset_normalizer import from_bytes

from incidents.errors import InvalidEvidence
from incidents.evidence.wandb.api_exports import EXPECTED as API_EXPECTED
from incidents.evidence.wandb.api_exports import is_api_table
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.frames import with_step_time

SEPARATOR = " - "
BAND_SUFFIXES = ("__MIN", "__MAX")
EXPECTED = ("a W&B chart export has a first column 'Step' (or the chart's x-axis) followed by columns "
            "named '<run name> - <metric>', optionally '<run name> - <metric>__MIN' and '__MAX'")


def read_csv_table(path: Path, max_bytes: int = 512 * 1024 * 1024) -> pd.DataFrame:
    """Read a CSV whatever its encoding (charset-normalizer decides); keep every cell as text."""
    raw = path.read_bytes()[: max_bytes + 1]
    if len(raw) > max_bytes:
        raise InvalidEvidence(f"{path.name} is larger than {max_bytes // (1024 * 1024)} MiB")
    best = from_bytes(raw[: 1 << 20]).best()
    encoding = best.encoding if best is not None else "utf-8"
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        raise InvalidEvidence(f"{path.name} is not readable text ({e})") from e
    try:
        return pd.read_csv(io.StringIO(text.lstrip("\ufeff")), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise InvalidEvidence(f"{path.name} is not a readable CSV: {e}") from e


def is_ui_table(columns: list[str]) -> bool:
    return len(columns) >= 2 and all(SEPARATOR in c for c in columns[1:])


def refuse(path: Path, columns: list[str]) -> InvalidEvidence:
    shown = ", ".join(repr(c) for c in columns[:10]) or "(none)"
    return InvalidEvidence(f"{path.name} is not a W&B export: {EXPECTED}; or {API_EXPECTED}. "
                           f"Found columns: {shown}")


def read_ui_csv(path: Path, table: pd.DataFrame | None = None) -> list[RunEvidence]:
    """Every run (or group) in a chart export, in column order."""
    table = read_csv_table(path) if table is None else table
    columns = [str(c) for c in table.columns]
    if not is_ui_table(columns) or is_api_table(columns):
        raise refuse(path, columns)
    x_name = columns[0]
    x = pd.to_numeric(table.iloc[:, 0].replace("", None), errors="coerce")
    if x.isna().all():
        raise InvalidEvidence(f"{path.name}: the first column {x_name!r} has no numbers; {EXPECTED}")
    runs: dict[str, dict[str, pd.Series]] = {}
    for position, column in enumerate(columns[1:], start=1):
        run, _, metric = column.rpartition(SEPARATOR)
        values = pd.to_numeric(table.iloc[:, position].replace("", None), errors="coerce").astype("float64")
        runs.setdefault(run, {})[metric] = values
    out = []
    for run, metrics in runs.items():
        warnings: list[str] = []
        frame = pd.DataFrame(metrics)
        frame.insert(0, x_name, x.to_numpy())
        frame = frame.dropna(subset=[x_name])
        mains = [m for m in metrics if not m.endswith(BAND_SUFFIXES)]
        frame = frame.dropna(subset=mains or list(metrics), how="all")
        steps = frame[x_name].to_numpy()
        if x_name.lower() in ("step", "_step") and (steps == steps.round()).all():
            frame = frame.set_index(x_name)
            frame.index = frame.index.astype("int64").rename("_step")
        else:
            warnings.append(f"the chart's x-axis is {x_name!r}, not Step; rows are numbered in file order")
            frame.index = pd.RangeIndex(len(frame), name="_step")
        if not frame.index.is_unique:
            frame = frame.groupby(level=0).last()
        frame = with_step_time(frame.sort_index())
        group = run.startswith("Group: ")
        name = run[len("Group: "):] if group else run
        out.append(RunEvidence(kind="ui_csv", name=name, history=frame, warnings=warnings,
                               tags=["group"] if group else []))
    return out
