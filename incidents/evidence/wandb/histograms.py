"""Every histogram encoding the W&B SDK and server have written, decoded to (bin edges, counts).

* ``{"_type": "histogram", "values": [...counts], "bins": [...edges]}`` — ``wandb.Histogram.to_json``
  and ``wandb.watch``; in a ``.wandb`` file of wandb 0.13 and older as one history item whose
  ``key`` is the name and whose ``value_json`` is that object, in ``wandb-history.jsonl`` as one
  value per key, in an API export as a cell;
* the nested-key form of newer SDKs: three items ``[name…, "_type"]``, ``[name…, "bins"]``,
  ``[name…, "values"]`` (the reader gathers them, then decodes them here);
* ``packedBins: {"min", "size", "count"}`` instead of ``bins`` — the server's form, in exports;
* a histogram nested under a dict (``{"Weights": {"fc": Histogram}}``) is named ``Weights/fc``.

A decoded histogram has one more edge than counts; anything else (a length mismatch, non-numbers,
an empty histogram) is not a histogram and the caller reports the key as unreadable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hourtab.core.values import json_loads

HISTOGRAM = "histogram"


def is_histogram(value: Any) -> bool:
    """True for a decoded JSON object the SDK wrote for a histogram."""
    return isinstance(value, dict) and value.get("_type") == HISTOGRAM


def json_cell(value: Any) -> Any:
    """A JSON text (a ``value_json`` or an export cell) as Python; anything else unchanged."""
    if isinstance(value, (str, bytes)) and value[:1] in ("{", b"{"):
        try:
            return json_loads(value)
        except ValueError:
            return value
    return value


def decode(value: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(edges, counts) of a histogram object or its JSON text; None when it is not a readable one."""
    value = json_cell(value)
    if not is_histogram(value):
        return None
    return from_parts(value.get("values"), value.get("bins"), value.get("packedBins"))


def from_parts(values: Any, bins: Any = None, packed: Any = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(edges, counts) from the parts of a histogram (each a list, or JSON text of one)."""
    try:
        counts = np.asarray(parse_list(values), dtype=np.float64)
        if bins is not None:
            edges = np.asarray(parse_list(bins), dtype=np.float64)
        else:
            packed = json_cell(packed)
            if not isinstance(packed, dict):
                return None
            n = int(packed.get("count", counts.size))
            edges = float(packed["min"]) + float(packed["size"]) * np.arange(n + 1, dtype=np.float64)
    except (TypeError, ValueError, KeyError):
        return None
    if counts.ndim != 1 or edges.ndim != 1 or counts.size == 0 or edges.size != counts.size + 1:
        return None
    return edges, counts


def parse_list(value: Any) -> Any:
    """A list given as JSON text (the nested-key form's parts) or as a list."""
    if isinstance(value, (str, bytes)):
        return json_loads(value)
    return value
