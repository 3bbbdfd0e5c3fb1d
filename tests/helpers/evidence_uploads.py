"""Evidence sent through the upload form (a run folder zipped, a damaged ``.wandb`` file), and what the app kept."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from sqlalchemy import func, select

from app.db import get_db
from incidents.evidence.models import Evidence
from tests.factories import write_records
from tests.helpers.forms import csrf_token


def rewrite_wandb(src: Path, dst: Path, edit) -> Path:
    """Copy a real ``.wandb`` file record by record, passing each decoded record through ``edit``."""
    # wandb is heavy to import; only the tests that rewrite runs pay for it
    from wandb.proto.wandb_internal_pb2 import Record

    from incidents.evidence.wandb.framing import iter_records

    warnings: list[str] = []
    records = [Record.FromString(payload) for _, payload in iter_records(src, warnings)]
    assert not warnings
    with open(dst, "wb") as f:
        write_records(f, (edit(r).SerializeToString() for r in records))
    return dst


def zip_bytes(run_dir: Path) -> bytes:
    """A run folder zipped as a browser user would: the folder itself at the archive's top."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for f in run_dir.rglob("*"):
            if f.is_file():
                z.write(f, f"{run_dir.name}/{f.relative_to(run_dir)}")
    return buffer.getvalue()


def upload(client, name: str, data: bytes, url: str = "/evidence"):
    """Upload ``data`` as a file called ``name`` through the evidence form, as a browser would."""
    token = csrf_token(client, url)
    return client.post(url, data={"csrf_token": token, "file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def stored_evidence(app) -> tuple[int, list[str]]:
    """How many evidence rows the database holds, and every blob file kept on disk."""
    with app.app_context():
        rows = get_db().scalar(select(func.count(Evidence.id)))
    blobs = Path(app.config["DATA_DIR"]) / "blobs"
    return rows, sorted(str(p.relative_to(blobs)) for p in blobs.rglob("*") if p.is_file()) \
        if blobs.exists() else []
