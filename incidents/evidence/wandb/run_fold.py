"""Folding a ``.wandb`` file's decoded records into a RunEvidence, one record at a time.

Each history value is written straight into its metric's float64 buffer (``columns.py``), so a run
of a million steps never exists as Python objects per row or per value. A row of plain numeric
metrics, the common case, is read through ``views.py``: protobuf lists its keys and values in C
and the values go into the buffers in one pass; any other row (nested keys, histograms, media,
text, typed values) is decoded with the SDK's classes and read item by item.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, deque
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf import json_format
from wandb.proto.wandb_internal_pb2 import (
    ConfigRecord,
    EnvironmentRecord,
    HistoryItem,
    HistoryRecord,
    OutputRawRecord,
    OutputRecord,
    Record,
    RunExitRecord,
    RunRecord,
    StatsRecord,
    SummaryRecord,
)
from wandb.proto.wandb_telemetry_pb2 import TelemetryRecord

from hourtab.core.values import json_loads
from incidents.evidence.wandb.columns import Columns
from incidents.evidence.wandb.ending import run_ending
from incidents.evidence.wandb.evidence import RunEvidence, histogram_role
from incidents.evidence.wandb.facts import environment, nested_values, summary_values, utc_datetime
from incidents.evidence.wandb.frames import histogram_frame, history_frame, system_frame
from incidents.evidence.wandb.histograms import from_parts, is_histogram
from incidents.evidence.wandb.nonfinite import from_columns
from incidents.evidence.wandb.views import (
    BODY_CLASSES,
    RECORD_METADATA,
    RecordView,
    fold_plain_row,
    fold_plain_update,
)

HIST_PARTS = frozenset({"_type", "bins", "values", "packedBins"})
#: Parts the SDK writes for a logged media file (``wandb.Image`` and the like) under ``[key…, part]``.
MEDIA_PARTS = frozenset({"sha256", "path", "size", "width", "height", "format", "caption"})
NESTED_PARTS = HIST_PARTS | MEDIA_PARTS
#: Console lines kept from ``output_raw`` records, to find how an interrupted run ended.
CONSOLE_TAIL = 200
_HISTOGRAM_TYPE = '"histogram"'

def histogram_kind(key: str) -> tuple[str, str]:
    """``gradients/0.weight`` → ``("gradients", "0.weight")``; anything else is ``other``."""
    prefix, _, rest = key.partition("/")
    if rest and prefix in ("gradients", "parameters"):
        return prefix, rest
    return "other", key


class RunFold:
    """Folds decoded records into columns and facts; one instance per file."""

    def __init__(self, histogram_limit: int) -> None:
        self.history = Columns("q")
        self.system = Columns("d")
        #: Latest JSON value per summary key: a plain key as ``str``, a nested one as a tuple.
        self.summary: dict[str | tuple[str, ...], str] = {}
        self.config: dict[tuple[str, ...], str] = {}
        self.run: dict[str, Any] = {}
        self.env: dict[str, Any] = {}
        self.telemetry: dict[str, Any] = {}
        self.exit: dict[str, Any] | None = None
        self.non_numeric: set[str] = set()
        self.hist_rows: list[tuple] = []
        self.hist_limit = histogram_limit
        self.hist_tally: Counter[str] = Counter()
        self.hist_dropped = 0
        self.counts: Counter[str | None] = Counter()   # None: a record of no known kind
        self.media: dict[str, dict[str, Any]] = {}
        self.console: deque[str] = deque(maxlen=CONSOLE_TAIL)
        self._handlers = {
            "history": self._history, "summary": self._summary, "stats": self._stats,
            "config": self._config, "run": self._run, "environment": self._environment,
            "telemetry": self._telemetry, "exit": self._exit, "output_raw": self._output,
            "output": self._output,     # the console as SDKs before 0.13 recorded it
        }

    def feed(self, record: Record) -> None:
        kind = record.WhichOneof("record_type")
        self.counts[kind] += 1
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(getattr(record, kind))

    def feed_payload(self, payload: bytes) -> None:
        """Fold one encoded record; on ``DecodeError`` nothing of it has been folded.

        Everything the SDK's ``Record`` would decode is decoded here too (so a record is refused
        exactly when ``Record.FromString`` would refuse it), but a plain row is read without
        building the SDK's message for it.
        """
        view = RecordView.FromString(payload)
        for name in RECORD_METADATA:
            body = getattr(view, name)
            if body:
                BODY_CLASSES[name].FromString(body)
        kind = view.WhichOneof("record_type")
        if kind is None:
            self.counts[kind] += 1
            return
        body = getattr(view, kind)
        if kind == "history" and fold_plain_row(self.history, body) or \
                kind == "summary" and fold_plain_update(self.summary, body):
            self.counts[kind] += 1
            return
        message = BODY_CLASSES[kind].FromString(body)
        self.counts[kind] += 1
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(message)

    def _history(self, h: HistoryRecord) -> None:
        step = h.step.num
        row = self.history.new_row(step)
        current = self.history.current
        parts: dict[tuple[str, ...], dict[str, str]] | None = None
        for item in h.item:
            nk = item.nested_key
            if len(nk) == 1:
                try:
                    current[nk[0]][row] = float(item.value_json)
                    continue
                except (KeyError, ValueError):   # a new metric (or a new block), or not a number
                    key = nk[0]
            elif not nk:
                key = item.key
            elif nk[-1] in NESTED_PARTS:
                # A histogram or media file, also when nested ({"Weights": {"fc": Histogram}}).
                if parts is None:
                    parts = {}
                parts.setdefault(tuple(nk[:-1]), {})[nk[-1]] = item.value_json
                continue
            else:
                key = ".".join(nk)
            self._item(key, item, row, step)
        if parts:
            self._nested(parts, step, row)

    def _item(self, key: str, item: HistoryItem, row: int, step: int) -> None:
        """One history value off the hot path: the first of its metric in a block, or not a float."""
        vj = item.value_json
        value: float | None
        try:
            value = float(vj)
        except ValueError:
            value = self._non_float(key, vj, item, step)
            if value is None:
                return
        if key == "_step":      # the row's step is ``h.step``; keep hot loops from missing on it
            self.history.ignore(key)
        else:
            self._add_slow(key, row, value)

    def _add_slow(self, key: str, row: int, value: float) -> None:
        self.history.set(key, row, value)

    def _summary(self, s: SummaryRecord) -> None:
        summary = self.summary
        for item in s.update:
            nk = item.nested_key
            summary[nk[0] if len(nk) == 1 else tuple(nk) or item.key] = item.value_json
        for item in s.remove:
            nk = item.nested_key
            summary.pop(nk[0] if len(nk) == 1 else tuple(nk) or item.key, None)

    def _stats(self, s: StatsRecord) -> None:
        cols = self.system
        row = cols.new_row(s.timestamp.seconds + s.timestamp.nanos / 1e9)
        for item in s.item:
            try:
                value = float(item.value_json)
            except ValueError:
                continue
            cols.set("system." + item.key, row, value)

    # -- the rest ---------------------------------------------------------------------------------
    def _non_float(self, key: str, vj: str, item: HistoryItem, step: int) -> float | None:
        if not vj:
            which = item.WhichOneof("value")
            if which in ("integer", "number"):
                return float(getattr(item, which))
            if which == "boolean":
                return float(item.boolean)
            self.non_numeric.add(key)
            return None
        try:
            value = json_loads(vj)
        except ValueError:
            self.non_numeric.add(key)
            return None
        if isinstance(value, bool):
            return float(value)
        if value is None:
            return None
        if isinstance(value, dict) and self._typed(key, value, step):
            return None
        self.non_numeric.add(key)
        return None

    def _typed(self, key: str, value: dict[str, Any], step: int) -> bool:
        """A histogram or media file written as one item (wandb 0.13 and older): kept as the
        nested-key form would be; False for any other object."""
        if is_histogram(value):
            self._add_histogram(key, from_parts(value.get("values"), value.get("bins"), value.get("packedBins")),
                                step)
            return True
        media = value.get("_type")
        if isinstance(media, str) and (media.endswith("-file") or media.startswith("images")):
            self._medium(key, media, {k: str(v) for k, v in value.items()}, step)
            return True
        return False

    def _nested(self, parts: dict[tuple[str, ...], dict[str, str]], step: int, row: int) -> None:
        for path, p in parts.items():
            kind_json = p.get("_type")
            if kind_json == _HISTOGRAM_TYPE:
                self._histogram("/".join(path), p, step)
                continue
            media = _media_type(kind_json)
            if media is not None:
                self._medium(".".join(path), media, p, step)
                continue
            # A nested metric that merely has a "values"/"size"… key: keep its scalars.
            for part, vj in p.items():
                key = ".".join((*path, part))
                try:
                    self._add_slow(key, row, float(vj))
                except ValueError:
                    self.non_numeric.add(key)

    def _medium(self, key: str, media: str, p: dict[str, str], step: int) -> None:
        seen = self.media.get(key)
        if seen is None:
            seen = self.media[key] = {"type": media, "count": 0, "digests": set(), "first_step": step}
        seen["count"] += 1
        seen["last_step"] = step
        digest = p.get("sha256") or p.get("path")
        if digest:
            seen["digests"].add(digest)
        # How many of the latest files are the same one: a model that collapsed keeps drawing one image.
        seen["same_at_end"] = seen.get("same_at_end", 0) + 1 if digest and digest == seen.get("last") else 1
        seen["last"] = digest

    def _histogram(self, key: str, p: dict[str, str], step: int) -> None:
        self._add_histogram(key, from_parts(p.get("values", "[]"), p.get("bins"), p.get("packedBins")), step)

    def _add_histogram(self, key: str, decoded: tuple[np.ndarray, np.ndarray] | None, step: int) -> None:
        if decoded is None:
            self.non_numeric.add(key)
            return
        kind, tensor = histogram_kind(key)
        self.hist_tally[kind] += 1
        role = histogram_role(key) if kind == "other" else None
        if role is not None:
            self.hist_tally[f"logged_{role}"] += 1
        if len(self.hist_rows) >= self.hist_limit:
            self.hist_dropped += 1
            return
        bins, counts = decoded
        self.hist_rows.append((key, kind, tensor, step, bins, counts))

    def _config(self, c: ConfigRecord) -> None:
        for item in c.update:
            self.config[tuple(item.nested_key) or (item.key,)] = item.value_json
        for item in c.remove:
            self.config.pop(tuple(item.nested_key) or (item.key,), None)

    def _run(self, r: RunRecord) -> None:
        self.run = {
            "run_id": r.run_id, "project": r.project, "name": r.display_name, "tags": list(r.tags),
            "host": r.host, "entity": r.entity, "group": r.run_group,
            "start": r.start_time.ToDatetime(dt.UTC) if r.HasField("start_time") else None,
            "git_commit": r.git.commit, "git_remote": r.git.remote_url,
        }
        if r.HasField("config"):
            self._config(r.config)
        if r.HasField("summary"):
            self._summary(r.summary)
        if r.HasField("telemetry"):
            self._telemetry(r.telemetry)

    def _environment(self, e: EnvironmentRecord) -> None:
        self.env.update(json_format.MessageToDict(e, preserving_proto_field_name=True))

    def _telemetry(self, t: TelemetryRecord) -> None:
        for name in ("cli_version", "python_version", "huggingface_version"):
            value = getattr(t, name)
            if value:
                self.telemetry[name] = value

    def _exit(self, e: RunExitRecord) -> None:
        self.exit = {"exit_code": e.exit_code, "runtime": e.runtime}

    def _output(self, o: OutputRawRecord | OutputRecord) -> None:
        self.console.extend(line for line in o.line.splitlines() if line.strip())

    # -- assembling the model ---------------------------------------------------------------------
    @property
    def empty(self) -> bool:
        return not len(self.history.index) and not self.run and not self.counts.get("stats")

    def finish(self, warnings: list[str], *, release: bool = False) -> RunEvidence:
        """The run as read so far. ``release`` hands the column buffers to the frames without a copy;
        the fold must not be fed again after it (a tail that goes on reading leaves it off)."""
        nonfinite = from_columns(self.history)
        history = history_frame(self.history, release)
        system = system_frame(self.system, release)
        start = self.run.get("start") or utc_datetime(self.env.get("started_at"))
        if start is not None and len(system.index):
            system.insert(0, "_runtime", system.index.to_numpy() - start.timestamp())
        runtime = _runtime(self.exit, history, system, start)
        logged = {role: self.hist_tally.get(f"logged_{role}", 0) for role in ("gradients", "parameters")}
        if any(logged.values()):
            warnings.append(f"{sum(logged.values())} histograms were logged by hand (not by wandb.watch): "
                            f"{logged['gradients']} of gradients, {logged['parameters']} of weights; "
                            "the gradient checks read them")
        if self.non_numeric:
            shown = ", ".join(sorted(self.non_numeric)[:8])
            warnings.append(f"{len(self.non_numeric)} logged key(s) hold non-numeric values (media, text) "
                            f"and are not charted: {shown}")
        if self.hist_dropped:
            warnings.append(f"{self.hist_dropped} histograms beyond the first {self.hist_limit} were counted "
                            "but not kept")
        state = "unfinished" if self.exit is None else ("finished" if self.exit["exit_code"] == 0 else "failed")
        return RunEvidence(
            kind="run",
            run_id=self.run.get("run_id", ""),
            name=self.run.get("name", "") or self.run.get("run_id", ""),
            project=self.run.get("project", ""),
            tags=self.run.get("tags", []),
            state=state,
            started_at=start,
            ended_at=start + dt.timedelta(seconds=runtime) if start is not None and runtime is not None else None,
            runtime_s=runtime,
            environment=environment(self.env, self.telemetry, self.run),
            config=nested_values(self.config, drop_prefix="_wandb"),
            summary=summary_values({(k,) if isinstance(k, str) else k: v for k, v in self.summary.items()}),
            history=history,
            system=system,
            histograms=histogram_frame(self.hist_rows),
            warnings=warnings,
            histogram_counts={k: self.hist_tally.get(k, 0) for k in ("gradients", "parameters", "other",
                                                                     "logged_gradients", "logged_parameters")},
            media={key: {"type": m["type"], "count": m["count"], "distinct": len(m["digests"]),
                         "same_at_end": m["same_at_end"], "first_step": m["first_step"], "last_step": m["last_step"]}
                   for key, m in sorted(self.media.items())},
            ending=run_ending(self.exit["exit_code"] if self.exit else None, list(self.console),
                              "the .wandb exit record" if self.exit else "no exit record in the .wandb file",
                              "console output in the .wandb file"),
            nonfinite=nonfinite,
        )


def _media_type(type_json: str | None) -> str | None:
    """``"image-file"`` → ``image-file``: the SDK's file-backed media types; None for anything else."""
    if not type_json:
        return None
    try:
        value = json_loads(type_json)
    except ValueError:
        return None
    return value if isinstance(value, str) and (value.endswith("-file") or value.startswith("images")) else None


def _runtime(exit_: dict | None, history: pd.DataFrame, system: pd.DataFrame,
             start: dt.datetime | None) -> float | None:
    """The longest span any record vouches for (exit's runtime is whole seconds only)."""
    spans = []
    if exit_ is not None and exit_["runtime"]:
        spans.append(float(exit_["runtime"]))
    if "_runtime" in history and history["_runtime"].notna().any():
        spans.append(float(history["_runtime"].max()))
    if start is not None and len(system.index):
        spans.append(float(system.index.max()) - start.timestamp())
    return max(spans) if spans else None
