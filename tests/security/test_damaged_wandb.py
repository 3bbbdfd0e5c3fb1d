"""One rule for damaged ``.wandb`` files: no readable record → refused (exit 2, HTTP 400, nothing
stored); truncated or damaged but with records → kept, with a warning naming the damage."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from incidents.evidence.wandb.framing import FILE_HEADER, FIRST, FULL, iter_records
from tests.helpers.evidence_uploads import stored_evidence, upload


def _chunk(kind: int, payload: bytes, length: int | None = None) -> bytes:
    checksum = zlib.crc32(payload, zlib.crc32(bytes((kind,))))
    return struct.pack("<IHB", checksum, len(payload) if length is None else length, kind) + payload


def _first_record(path: Path) -> bytes:
    return next(iter_records(path, []))[1]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def refused_files(real: Path) -> dict[str, bytes]:
    record = _first_record(real)
    return {
        "header-only": FILE_HEADER,
        "no-last-chunk": FILE_HEADER + _chunk(FIRST, record[: len(record) // 2]),
        "chunk-length-0xffff": FILE_HEADER + _chunk(FULL, record[:64], length=0xFFFF) + b"\0" * 64,
        # A record whose first field claims 2 GB of data: the checksum holds, the protobuf does not.
        "protobuf-length-2gb": FILE_HEADER + _chunk(FULL, b"\x0a" + _varint(2**31) + b"xyz"),
    }


@pytest.fixture(scope="module")
def files(hostile_run, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damaged")
    out = {}
    for kind, data in refused_files(hostile_run["file"]).items():
        out[kind] = root / f"run-{kind}.wandb"
        out[kind].write_bytes(data)
    real = hostile_run["file"].read_bytes()
    last_offset = list(iter_records(hostile_run["file"], []))[-1][0]
    out["truncated"] = root / "run-truncated.wandb"
    out["truncated"].write_bytes(real[: last_offset + 12])   # cut inside the last record
    return out


REFUSED = ["header-only", "no-last-chunk", "chunk-length-0xffff", "protobuf-length-2gb"]


@pytest.mark.parametrize("kind", REFUSED)
def test_cli_refuses_a_file_with_no_readable_record(files, kind):
    r = CliRunner().invoke(cli, ["wandb", "inspect", str(files[kind])])
    assert r.exit_code == 2, r.output
    assert "no readable" in r.output and "refused" in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


@pytest.mark.parametrize("kind", REFUSED)
def test_upload_of_a_file_with_no_readable_record_is_400_and_stores_nothing(app, logged_in, files, kind):
    r = upload(logged_in, f"run-{kind}.wandb", files[kind].read_bytes())
    assert r.status_code == 400 and "no readable" in r.get_data(as_text=True)
    assert stored_evidence(app) == (0, [])


def test_a_truncated_file_with_records_is_kept_with_a_warning(app, logged_in, files):
    r = CliRunner().invoke(cli, ["wandb", "inspect", str(files["truncated"])])
    assert r.exit_code == 0, r.output
    assert "warning:" in r.output and ("ends in the middle" in r.output or "damaged" in r.output)
    r = upload(logged_in, "run-truncated.wandb", files["truncated"].read_bytes())
    assert r.status_code == 302
    rows, blobs = stored_evidence(app)
    assert rows == 1 and blobs


def test_the_rule_is_in_the_manual():
    manual = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text()
    assert "no readable record" in manual and "kept with a warning" in manual
