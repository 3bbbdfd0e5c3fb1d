"""Public-API exports a user saved: ``run.history()`` / ``run.scan_history()`` and the system stream.

Layouts: ``_step, _runtime, _timestamp`` plus logged keys, one row per step (history), or
``system.*`` keys with ``_timestamp``/``_runtime`` (``run.history(stream="system")``), saved as
CSV, JSON (records, columns or split orientation), JSONL or Parquet. Watch histograms arrive as
``{"_type": "histogram", "bins": [...], "values": [...]}`` cells (a Python ``repr`` of that dict in
a CSV written by pandas; the server's ``packedBins`` form is understood too).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hourtab.core.values import check_json_depth, json_loads
from incidents.errors import InvalidEvidence
from incidents.evidence.wandb.evidence import (
    RunEvidence,
    empty_histograms,
    empty_history,
    empty_system,
    histogram_counts,
)
from incidents.evidence.wandb.frames import histogram_frame, with_step_time
from incidents.evidence.wandb.histograms import decode, is_histogram
from incidents.evidence.wandb.nonfinite import from_table
from incidents.evidence.wandb.run_fold import histogram_kind

#: An export split the evidence model's way: (history, system, histograms).
Frames = tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]

EXPECTED = ("a W&B public-API export has the columns _step, _runtime, _timestamp and the logged "
            "metrics (history), or _timestamp, _runtime and system.* metrics (system stream)")
_CELL_LIMIT = 1 << 20


def is_api_table(columns: list[str]) -> bool:
    return "_step" in columns or ("_timestamp" in columns and any(c.startswith("system.") for c in columns))


def read_table(path: Path) -> pd.DataFrame:
    """Load an export file into a DataFrame, by extension; JSON orientation is sniffed."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix == ".jsonl":
            check_json_depth(path.read_bytes())
            return pd.read_json(path, lines=True, dtype=False)
        if suffix == ".json":
            return _read_json(path)
    except (ValueError, OSError) as e:
        raise InvalidEvidence(f"{path.name} could not be read as {suffix[1:].upper()}: {e}") from e
    raise InvalidEvidence(f"{path.name}: unsupported export type {suffix!r} (CSV, JSON, JSONL or Parquet)")


def _read_json(path: Path) -> pd.DataFrame:
    data = json_loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return pd.DataFrame.from_records(data)
    if isinstance(data, dict) and {"columns", "data"} <= data.keys():
        return pd.DataFrame(data["data"], columns=data["columns"])
    if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        return pd.DataFrame(data)        # pandas' default "columns" orientation
    raise InvalidEvidence(f"{path.name} is JSON but not a table; {EXPECTED}")


def read_api_export(path: Path, table: pd.DataFrame | None = None) -> RunEvidence:
    """A saved ``run.history()``/``scan_history()`` or system-stream export → RunEvidence."""
    table = read_table(path) if table is None else table
    columns = [str(c) for c in table.columns]
    if not is_api_table(columns):
        shown = ", ".join(columns[:10]) or "(none)"
        raise InvalidEvidence(f"{path.name} is not a W&B export: {EXPECTED}; found columns: {shown}")
    warnings: list[str] = []
    table.columns = columns
    if _has_nested(table):      # {"gradients": {"fc.weight": <histogram>}} as one cell: name it gradients/fc.weight
        table = pd.DataFrame.from_records([flat_row({str(k): v for k, v in r.items()})
                                           for r in table.to_dict("records")])
    media: dict[str, dict[str, Any]] = {}
    history, system, histos = frames_from_table(table, warnings, media)
    is_system = history.empty and not system.empty
    evidence = RunEvidence(kind="system_export" if is_system else "history_export",
                           name=path.stem, history=history, system=system, histograms=histos,
                           warnings=warnings, media=media)
    evidence.histogram_counts = histogram_counts(histos)
    evidence.nonfinite = _logged_nonfinite(table)
    clock = history["_runtime"] if "_runtime" in history else system.get("_runtime")
    if clock is not None and clock.notna().any():
        evidence.runtime_s = float(clock.max())
    return evidence


def _has_nested(table: pd.DataFrame) -> bool:
    """Cells holding dicts of metrics (not one typed value such as a histogram)."""
    for column in table.columns:
        if table[column].dtype == object:
            cell = next((v for v in table[column] if isinstance(v, dict)), None)
            if cell is not None and "_type" not in cell:
                return True
    return False


def _logged_nonfinite(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Non-finite values the export says were logged (the history columns, by step)."""
    columns = [c for c in table.columns if not str(c).startswith(("system.", "_"))]
    steps = pd.to_numeric(table["_step"], errors="coerce") if "_step" in table else \
        pd.Series(np.arange(len(table)), index=table.index)
    known = steps.notna()
    return from_table(table.loc[known, columns], steps[known].astype("int64"))


def flat_row(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested metrics as one level: ``{"Weights": {"fc": <histogram>}}`` → ``{"Weights/fc": <histogram>}``.

    Typed values (histograms, media) keep their dict and join their path with "/", as the ``.wandb``
    reader names them; nested scalars join with "." (``train.loss``), as W&B shows them.
    """
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict) and "_type" not in value and value:
            for inner, v in flat_row(value).items():
                typed = isinstance(v, dict) and "_type" in v
                out[f"{prefix}{key}{'/' if typed else '.'}{inner}"] = v
        else:
            out[f"{prefix}{key}"] = value
    return out


def frames_from_rows(rows: list[dict[str, Any]], warnings: list[str], system: bool = False,
                     media: dict[str, dict[str, Any]] | None = None) -> Frames:
    rows = [flat_row(r) for r in rows]
    table = pd.DataFrame.from_records(rows) if rows else pd.DataFrame()
    if system and "_step" in table:
        table = table.drop(columns=["_step"])
    return frames_from_table(table, warnings, media)


def frames_from_table(table: pd.DataFrame, warnings: list[str],
                      media: dict[str, dict[str, Any]] | None = None) -> Frames:
    """Split an export table into (history, system, histograms) frames of the evidence model."""
    system_cols = [c for c in table.columns if str(c).startswith("system.")]
    system = empty_system()
    if system_cols and "_timestamp" in table:
        sys_table = table[["_timestamp", *(["_runtime"] if "_runtime" in table else []), *sorted(system_cols)]]
        sys_table = sys_table.dropna(subset=system_cols, how="all")
        system = _numeric(sys_table).set_index("_timestamp").sort_index()
        system.index = system.index.astype("float64")
    rest = table.drop(columns=system_cols)
    if system_cols and "_step" not in rest:
        return empty_history(), system, empty_histograms()
    if "_step" not in rest:
        rest = rest.assign(_step=np.arange(len(rest)))
        warnings.append("no _step column; rows are numbered in file order")
    rest = rest.dropna(subset=["_step"])
    rest["_step"] = pd.to_numeric(rest["_step"], errors="coerce")
    rest = rest.dropna(subset=["_step"])
    rest["_step"] = rest["_step"].astype("int64")
    rest = rest.drop(columns=[c for c in rest.columns if str(c).startswith("_wandb")])
    hist_rows: list[tuple] = []
    keep: dict[str, np.ndarray] = {}
    for column in rest.columns:
        if column == "_step":
            continue
        series = rest[column]
        if not pd.api.types.is_numeric_dtype(series):
            histos = _histograms(column, rest["_step"], series)
            if histos is not None:
                hist_rows.extend(histos)
                continue
            files = _media(rest["_step"], series)
            if files is not None:
                if media is not None:
                    media[str(column)] = files
                continue
            numeric = pd.to_numeric(series, errors="coerce")
            if numeric.notna().sum() < series.notna().sum():
                warnings.append(f"column {column!r} holds non-numeric values; they are not charted")
            series = numeric
        keep[column] = pd.to_numeric(series, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    history = pd.DataFrame(keep, index=pd.Index(rest["_step"].to_numpy(), name="_step"))
    history = history[sorted(history.columns, key=lambda c: (not str(c).startswith("_"), str(c)))]
    if not history.index.is_unique:
        history = history.groupby(level=0).last()
    history = with_step_time(history.sort_index())
    return history, system, histogram_frame(hist_rows)


def _numeric(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.apply(pd.to_numeric, errors="coerce").astype("float64")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("{") and len(value) < _CELL_LIMIT:
        try:
            return json_loads(value)
        except ValueError:
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
    return value


def _media(steps: pd.Series, series: pd.Series) -> dict[str, Any] | None:
    """A column of logged media files (``{"_type": "image-file", "sha256": …}``), summarised."""
    values = [(_cell(v), s) for v, s in zip(series, steps, strict=True) if v is not None and v == v]
    if not values or not all(isinstance(v, dict) and str(v.get("_type", "")).endswith("-file") for v, _ in values):
        return None
    digests = [v.get("sha256") or v.get("path") for v, _ in values]
    same = next((i for i, d in enumerate(reversed(digests)) if d != digests[-1]), len(digests))
    return {"type": str(values[0][0]["_type"]), "count": len(values), "distinct": len(set(digests)),
            "same_at_end": same, "first_step": int(values[0][1]), "last_step": int(values[-1][1])}


def _histograms(column: str, steps: pd.Series, series: pd.Series) -> list[tuple] | None:
    """A column of histograms (any encoding ``histograms.decode`` reads), or None when it is not one."""
    values = [(_cell(v), s) for v, s in zip(series, steps, strict=True) if v is not None and v == v]
    if not values or not all(is_histogram(v) for v, _ in values):
        return None
    kind, tensor = histogram_kind(column)
    rows = []
    for cell, step in values:
        decoded = decode(cell)
        if decoded is not None:
            rows.append((column, kind, tensor, int(step), decoded[0], decoded[1]))
    return rows
