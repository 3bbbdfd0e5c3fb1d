"""History read into per-metric buffers equals what the script logged: missing stays missing, types apart.

The run is written by the installed SDK (``shapes_run.py``); the expected values come from the rows
the script passed to ``wandb.log``, so a reader that shifts a sparse metric, fills a gap, drops a
late metric or keeps a string as a number fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from wandb.proto import wandb_internal_pb2 as pb

from incidents.evidence.wandb import columns, load_run, records, run_fold, views
from incidents.evidence.wandb.columns import Columns
from incidents.evidence.wandb.tail import LogTail
from tests.incidents.evidence.wandb.shapes_run import STEPS, ensure_shapes_run


@pytest.fixture(scope="session")
def shapes(tmp_path_factory) -> dict:
    return ensure_shapes_run(tmp_path_factory.getbasetemp() / "wandb_shapes_run")


def _flat(row: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _number(value) -> float | None:
    """What a history column holds for a logged value: numbers and booleans as floats, else missing."""
    if isinstance(value, bool | int | float) and value is not None:
        return float(value)
    return None


def expected_history(rows: list[dict]) -> dict[str, list[float]]:
    """Per numeric key, its value at every step (NaN where the row did not log a number for it)."""
    flat = [_flat(r) for r in rows]
    keys = {k for r in flat for k, v in r.items() if _number(v) is not None}
    return {k: [math.nan if _number(r.get(k)) is None else _number(r.get(k)) for r in flat] for k in sorted(keys)}


@pytest.fixture(params=["default blocks", "blocks of 2-3 rows"])
def block_sizes(request, monkeypatch):
    """The default growth, and blocks so small that 300 rows cross ~100 block boundaries."""
    if request.param != "default blocks":
        monkeypatch.setattr(columns, "_FIRST_BLOCK", 2)
        monkeypatch.setattr(columns, "_MAX_BLOCK", 3)
    return request.param


def test_history_is_what_was_logged_key_by_key(shapes, block_sizes, monkeypatch):
    taken = []
    plain_row = run_fold.fold_plain_row
    monkeypatch.setattr(run_fold, "fold_plain_row", lambda cols, body: taken.append(plain_row(cols, body))
                        or taken[-1])
    run = load_run(shapes["file"])
    # plain numeric rows went through the protobuf views, the others (text, None, nested) item by item
    assert 100 < taken.count(True) < STEPS - 50 and taken.count(False) == STEPS - taken.count(True)
    history = run.history
    expected = expected_history(shapes["rows"])
    assert list(history.index) == list(range(STEPS)) and history.index.name == "_step"
    assert run.metrics == sorted(expected)          # "phase" (always text) is no metric
    for key, values in expected.items():
        np.testing.assert_array_equal(history[key].to_numpy(), np.array(values), err_msg=key)
    assert history.dtypes.eq(np.float64).all()
    assert history["_runtime"].notna().all() and history["_runtime"].is_monotonic_increasing
    assert np.allclose(history["step_time_s"].to_numpy()[1:], np.diff(history["_runtime"].to_numpy()))


def test_a_key_absent_from_a_row_is_missing_there_and_nowhere_else(shapes):
    history = load_run(shapes["file"]).history
    # every 7th step; first logged at step 150; None every 10th step is missing, not a value
    assert history["eval/acc"].dropna().index.tolist() == list(range(0, STEPS, 7))
    assert history["late"].first_valid_index() == 150 and history["late"].loc[150:].notna().all()
    assert history["maybe"].dropna().index.tolist() == [s for s in range(STEPS) if s % 10 == 5]
    # a logged NaN or ±inf is a value the run produced; the steps that did not log the key are gaps
    diverge = history["diverge"]
    assert math.isnan(diverge[100]) and diverge[101] == math.inf and diverge[102] == -math.inf
    assert diverge[np.isfinite(diverge)].index.tolist() == [s for s in range(0, STEPS, 2) if s != 100 and s != 102]


def test_the_reader_tells_a_logged_nan_from_a_value_never_logged(shapes):
    """In the frame both read as NaN; the reader still knows which NaN the run logged."""
    fold = run_fold.RunFold(records.DEFAULT_HISTOGRAM_LIMIT)
    warnings: list[str] = []
    records.fold_records(fold, shapes["file"], warnings)
    logged = {name: (rows, values) for name, rows, values in fold.history.logged_nonfinite()}
    assert list(logged) == ["diverge"] and warnings == []     # not eval/acc, late or maybe: their gaps are gaps
    rows, values = logged["diverge"]
    steps = [s for s in range(STEPS) if s % 2 == 0 or s == 101]
    assert rows.tolist() == steps
    assert math.isnan(values[steps.index(100)]) and values[steps.index(101)] == math.inf
    assert values[steps.index(102)] == -math.inf and np.isfinite(np.delete(values, [50, 51, 52])).all()
    fold.finish(warnings, release=True)
    assert [name for name, _, _ in fold.history.logged_nonfinite()] == ["diverge"]   # also once handed over


def test_mixed_types_keep_their_numbers_and_say_which_keys_held_text(shapes):
    run = load_run(shapes["file"])
    mixed = run.history["mixed"]
    assert mixed[6] == 1.0 and math.isnan(mixed[5]) and mixed[4] == 1.0 and mixed[7] == 1.75  # True; "n/a"; 4 × 0.25
    assert "phase" not in run.history
    assert any("non-numeric" in w and "mixed" in w and "phase" in w for w in run.warnings)


def test_summary_holds_each_keys_last_logged_value(shapes):
    summary = load_run(shapes["file"]).summary
    last: dict = {}
    for row in shapes["rows"]:
        last.update(_flat(row))
    for key, value in last.items():
        assert summary[key] == value or (value != value and summary[key] != summary[key]), key
    assert summary["maybe"] == STEPS - 5 and summary["phase"] == "train" and summary["opt.lr"] == 0.1 / 276
    assert summary["manual"] == 42 and summary["_step"] == STEPS - 1


def test_histograms_plain_and_nested_come_back_exactly(shapes):
    run = load_run(shapes["file"])
    h = run.histograms
    assert sorted(set(h["key"])) == ["Gradients/fc", "weights_hist"]
    for logged in shapes["hists"]:
        at = h[h["step"] == logged["step"]].set_index("key")
        np.testing.assert_array_equal(at.loc["weights_hist", "counts"], logged["counts"])
        np.testing.assert_array_equal(at.loc["Gradients/fc", "counts"], logged["counts"][::-1])
        for key in ("weights_hist", "Gradients/fc"):
            np.testing.assert_array_equal(at.loc[key, "bins"], logged["bins"])
    n = len(shapes["hists"])
    assert run.histogram_counts["logged_gradients"] == run.histogram_counts["logged_parameters"] == n
    assert not any(c.startswith(("weights_hist", "Gradients")) for c in run.history.columns)
    # nor into the summary, the nested one ({"Gradients": {"fc": histogram}}) as its parts neither
    assert not any(k.startswith(("weights_hist", "Gradients")) for k in run.summary)


def test_a_tail_reading_the_file_in_pieces_gives_the_same_evidence(shapes, tmp_path, block_sizes):
    """The tail's reads copy the buffers and go on filling them; the one-shot read hands them over."""
    data = shapes["file"].read_bytes()
    growing = tmp_path / shapes["file"].name
    tail = None
    for cut in (len(data) // 5, len(data) // 2, len(data)):
        growing.write_bytes(data[:cut])
        tail = tail or LogTail(growing)
        seen = tail.read()
    whole = load_run(shapes["file"])
    pd.testing.assert_frame_equal(seen.history, whole.history, check_exact=True)
    pd.testing.assert_frame_equal(seen.system, whole.system, check_exact=True)
    assert seen.summary == whole.summary and seen.histogram_counts == whole.histogram_counts
    assert len(seen.histograms) == len(whole.histograms)


def test_columns_keep_the_last_write_in_a_row_and_missing_cells_missing():
    cols = Columns("q")
    for step in range(10):
        row = cols.new_row(step * 2)
        cols.set("every", row, step)
        cols.set("every", row, step + 0.5)            # the same key twice in a row: the last wins
        if step >= 7:
            cols.set("late", row, -step)
    index, copied = cols.arrays()
    row = cols.new_row(20)                              # a copy leaves the columns readable and writable
    cols.set("every", row, 99.0)
    index2, handed = cols.arrays(release=True)
    assert index.tolist() == list(range(0, 20, 2)) and index2.tolist() == [*index.tolist(), 20]
    assert copied["every"].tolist() == [s + 0.5 for s in range(10)]
    np.testing.assert_array_equal(handed["late"], [math.nan] * 7 + [-7, -8, -9, math.nan])
    assert handed["every"][-1] == 99.0 and len(copied["every"]) == 10
    assert list(cols.logged_nonfinite()) == []            # "late" has gaps, but logged no NaN


def test_columns_list_logged_nan_and_inf_but_not_gaps():
    cols = Columns("q")
    for step, value in enumerate([1.0, math.nan, 2.0, math.inf]):
        row = cols.new_row(step)
        cols.set("loss", row, value)
        if step == 2:
            cols.set("eval", row, math.nan)
        if step == 0:
            cols.set("sparse", row, 5.0)
    found = {name: (rows.tolist(), values.tolist()) for name, rows, values in cols.logged_nonfinite()}
    assert list(found) == ["loss", "eval"] and found["eval"][0] == [2]
    assert found["loss"][0] == [0, 1, 2, 3] and found["loss"][1][3] == math.inf


def _items(*items: dict) -> list[bytes]:
    record = pb.HistoryRecord()
    for fields in items:
        record.item.add(**fields)
    return list(views.HistoryView.FromString(record.SerializeToString()).item)


def test_flat_items_lists_plain_rows_and_refuses_every_other_shape():
    plain = _items({"nested_key": ["a"], "value_json": "1"}, {"nested_key": ["b/c"], "value_json": '"x"'})
    assert views.flat_items(plain) == (["a", "b/c"], ["1", '"x"'])
    assert views.flat_items([]) == ([], [])
    refused = {
        "nested key": _items({"nested_key": ["opt", "lr"], "value_json": "1"}),
        # one item with two key parts and one with none: the counts alone would pair them wrongly
        "two parts and none": _items({"nested_key": ["x", "y"], "value_json": "1"}, {"value_json": "2"}),
        "old key field": _items({"key": "old", "value_json": "1"}),
        "typed value": _items({"nested_key": ["t"], "number": 1.5}),
        "empty value": _items({"nested_key": ["e"], "value_json": ""}, {"nested_key": ["f"], "value_json": "1"}),
        "a NUL key": _items({"nested_key": ["\0"], "value_json": "1"}, {"nested_key": ["g"], "value_json": "2"}),
    }
    assert {shape: views.flat_items(items) for shape, items in refused.items()} == dict.fromkeys(refused)
