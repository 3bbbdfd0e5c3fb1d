"""Shapes real runs write: tracebacks as consoles show them, histogram encodings, logged NaN in exports."""

from __future__ import annotations

import tarfile

import numpy as np
import pandas as pd
import pytest

from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.histograms import decode
from incidents.evidence.wandb.nonfinite import from_table
from incidents.evidence.wandb.tracebacks import cause_of, last_traceback

WINDOWS = r'''Traceback (most recent call last):
  File "C:\Users\me\Desktop\Pytorch-UNet\train.py", line 253, in <module>
    train_model(
  File "C:\Users\me\Desktop\Pytorch-UNet\evaluate.py", line 16, in evaluate
    for batch in tqdm(dataloader, total=num_val_batches):
  File "C:\Users\me\AppData\Local\Programs\Python\Python311\Lib\site-packages\torch\utils\data\dataloader.py", line 1256, in _try_get_data
    raise RuntimeError(
RuntimeError: DataLoader worker (pid(s) 30640, 28712) exited unexpectedly'''

CHAINED = '''Traceback (most recent call last):
  File "/home/u/train.py", line 10, in <module>
    x = load()
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/u/train.py", line 12, in <module>
    torch.save(model, "ckpt/model.pt")
  File "/usr/lib/python3.10/site-packages/torch/serialization.py", line 440, in save
    with _open_zipfile_writer(f) as opened_zipfile:
FileNotFoundError: [Errno 2] No such file or directory: 'ckpt/model.pt'
wandb: Waiting for W&B process to finish... (failed 1).'''

RICH = '''╭───────────────────── Traceback (most recent call last) ─────────────────────╮
│ /home/u/project/fit.py:88 in main                                          │
│ /opt/conda/lib/python3.10/site-packages/lightning/pytorch/trainer.py:532 in fit │
╰──────────────────────────────────────────────────────────────────────────────╯
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!'''


def test_the_users_line_on_windows_is_the_deepest_frame_outside_the_installation():
    shown = last_traceback(WINDOWS.splitlines())
    assert shown["exception"] == "RuntimeError" and shown["cause"] == "data loader worker failure"
    assert shown["user_frame"] == {"file": "evaluate.py", "line": 16, "function": "evaluate",
                                   "code": "for batch in tqdm(dataloader, total=num_val_batches):"}


def test_the_last_of_chained_tracebacks_is_read():
    shown = last_traceback(CHAINED.splitlines())
    assert shown["exception"] == "FileNotFoundError" and shown["cause"] == "missing file or directory"
    assert shown["user_frame"]["line"] == 12 and shown["user_frame"]["code"].startswith("torch.save(")


def test_a_rich_traceback_names_the_users_frame():
    shown = last_traceback(RICH.splitlines())
    assert shown["cause"] == "device mismatch"
    assert shown["user_frame"] == {"file": "fit.py", "line": 88, "function": "main", "code": None}


@pytest.mark.parametrize("name, message, cause", [
    ("torch.cuda.OutOfMemoryError", "CUDA out of memory. Tried to allocate 48.00 MiB", "out of GPU memory"),
    ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (4x175232 and 184832x512)", "tensor shape mismatch"),
    ("NameError", "name 'n_train' is not defined", "error in the training code"),
    ("IndexError", "list index out of range", "index or key out of range"),
    ("RuntimeError", "range of [nan, nan] is not finite", "non-finite values"),
    ("KeyboardInterrupt", "", "interrupted by hand"),
    ("SystemError", "something else", "uncaught exception"),
])
def test_cause_classes(name, message, cause):
    assert cause_of(name, message)[0] == cause


def test_histogram_encodings_decode_to_edges_and_counts():
    edges, counts = decode('{"_type": "histogram", "values": [1, 2], "bins": [0.0, 0.5, 1.0]}')
    assert edges.tolist() == [0.0, 0.5, 1.0] and counts.tolist() == [1.0, 2.0]
    edges, counts = decode({"_type": "histogram", "values": [3, 0, 8], "packedBins": {"min": -1.0, "size": 0.5,
                                                                                     "count": 3}})
    assert np.allclose(edges, [-1.0, -0.5, 0.0, 0.5]) and counts.tolist() == [3.0, 0.0, 8.0]
    assert decode({"_type": "histogram", "values": [1, 2], "bins": [0.0, 1.0]}) is None   # one edge short
    assert decode({"_type": "image-file", "path": "x.png"}) is None


def test_an_export_tells_a_logged_nan_from_an_empty_cell():
    table = pd.DataFrame({"loss": ["1.0", None, "NaN", "nan", "0.5", "inf"], "val": [None] * 6})
    found = from_table(table, pd.Series(range(6)))
    assert found == {"loss": {"first_step": 2, "last_step": 5, "count": 3, "from_step": 5}}


def test_an_archive_packed_from_inside_its_folder_is_read(tmp_path):
    """``tar -C run-folder -czf run.tar.gz .`` writes the archive's root as "./" first."""
    from tests.helpers.corpus import archive

    with tarfile.open(archive("kobert-oom-0.15")) as t:
        t.extractall(tmp_path / "run", filter="data")
    packed = tmp_path / "run.tar.gz"
    with tarfile.open(packed, "w:gz") as t:
        t.add(tmp_path / "run", arcname=".")
    assert load_run(packed).ending["cause"] == "out of GPU memory"
