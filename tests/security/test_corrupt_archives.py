"""A damaged zip is a clear 400 (web) or exit 2 (CLI), and nothing from it is kept."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from tests.helpers.evidence_uploads import stored_evidence, upload


def _run_zip(run_dir: Path, compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        for path in sorted(run_dir.rglob("*")):
            if path.is_file():
                z.write(path, f"{run_dir.name}/{path.relative_to(run_dir)}")
    return buffer.getvalue()


def _members(data: bytes) -> list[zipfile.ZipInfo]:
    return zipfile.ZipFile(io.BytesIO(data)).infolist()


def _central_entry(data: bytearray, suffix: str) -> int:
    """Offset of the central-directory entry of the member whose name ends in ``suffix``."""
    at = data.find(b"PK\x01\x02")
    while at != -1:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + name_len]).decode().endswith(suffix):
            return at
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no member ending in {suffix}")


def flipped_crc(run_dir: Path) -> bytes:
    """The .wandb member's CRC-32 changed in both its local header and the central directory."""
    data = bytearray(_run_zip(run_dir))
    info = next(i for i in _members(bytes(data)) if i.filename.endswith(".wandb"))
    wrong = struct.pack("<I", info.CRC ^ 0xFFFFFFFF)
    data[info.header_offset + 14:info.header_offset + 18] = wrong
    central = _central_entry(data, ".wandb")
    data[central + 16:central + 20] = wrong
    return bytes(data)


def understated_size(run_dir: Path) -> bytes:
    """A stored (uncompressed) .wandb member whose headers declare half the bytes it holds."""
    data = bytearray(_run_zip(run_dir, zipfile.ZIP_STORED))
    info = next(i for i in _members(bytes(data)) if i.filename.endswith(".wandb"))
    small = struct.pack("<I", info.file_size // 2)
    data[info.header_offset + 18:info.header_offset + 26] = small + small   # compressed and real size
    central = _central_entry(data, ".wandb")
    data[central + 20:central + 28] = small + small
    return bytes(data)


DAMAGE = {"flipped-crc": flipped_crc, "understated-size": understated_size}


@pytest.fixture(scope="module")
def damaged(hostile_run, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("zips")
    out = {}
    for kind, make in DAMAGE.items():
        out[kind] = root / f"{kind}.zip"
        out[kind].write_bytes(make(hostile_run["dir"]))
    return out


def test_the_undamaged_zip_is_read(hostile_run, tmp_path):
    path = tmp_path / "good.zip"
    path.write_bytes(_run_zip(hostile_run["dir"]))
    r = CliRunner().invoke(cli, ["wandb", "inspect", str(path)])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_cli_exits_2_with_one_line(damaged, kind):
    r = CliRunner().invoke(cli, ["wandb", "inspect", str(damaged[kind])])
    assert r.exit_code == 2, r.output
    assert "damaged" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_upload_is_a_400_and_keeps_nothing(app, logged_in, damaged, kind):
    r = upload(logged_in, f"my-{kind}.zip", damaged[kind].read_bytes())
    text = r.get_data(as_text=True)
    assert r.status_code == 400, text[-800:]
    assert "damaged" in text and f"my-{kind}.zip" in text
    assert stored_evidence(app) == (0, [])
