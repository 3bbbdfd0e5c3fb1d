"""Damaged .wandb files: the records before the damage are kept and the offset is named."""

from __future__ import annotations

import io
import re
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from incidents.errors import InvalidEvidence
from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.framing import BLOCK_SIZE, FILE_HEADER, Cursor, iter_records
from tests.factories import write_records


def _records(path):
    warnings: list[str] = []
    return list(iter_records(path, warnings)), warnings


@pytest.mark.torch
def test_writer_reproduces_sdk_files_byte_for_byte(wandb_runs):
    for run in wandb_runs.values():
        original = run["file"].read_bytes()
        records, warnings = _records(run["file"])
        assert warnings == []
        out = io.BytesIO()
        write_records(out, (payload for _, payload in records))
        assert out.getvalue() == original


@pytest.mark.torch
def test_checksum_is_crc32_ieee_of_type_and_data(wandb_runs):
    data = wandb_runs["watched"]["file"].read_bytes()
    assert data[:7] == FILE_HEADER
    crc = int.from_bytes(data[7:11], "little")
    length = int.from_bytes(data[11:13], "little")
    kind = data[13]
    assert crc == zlib.crc32(bytes([kind]) + data[14:14 + length])


@pytest.mark.torch
def test_truncated_mid_record_keeps_what_precedes(wandb_runs, tmp_path):
    source = wandb_runs["watched"]["file"]
    records, _ = _records(source)
    k = len(records) // 2
    offset_k = records[k][0]
    damaged = tmp_path / "run-trunc.wandb"
    damaged.write_bytes(source.read_bytes()[: offset_k + 10])
    got, warnings = _records(damaged)
    assert [p for _, p in got] == [p for _, p in records[:k]]
    assert len(warnings) == 1 and f"byte {offset_k}" in warnings[0] and "ends in the middle" in warnings[0]
    run = load_run(damaged)               # the whole pipeline: no crash, the warning carried along
    assert any(f"byte {offset_k}" in w for w in run.warnings)
    assert 0 < run.steps < wandb_runs["watched"]["steps"]


@pytest.mark.torch
def test_flipped_byte_keeps_records_before_and_names_the_offset(wandb_runs, tmp_path):
    source = wandb_runs["plain <script>alert(1)</script>"]["file"]
    records, _ = _records(source)
    k = len(records) // 3
    offset_k, payload_k = records[k]
    data = bytearray(source.read_bytes())
    data[offset_k + 7 + len(payload_k) // 2] ^= 0x40
    damaged = tmp_path / "run-flip.wandb"
    damaged.write_bytes(bytes(data))
    got, warnings = _records(damaged)
    assert [p for _, p in got[:k]] == [p for _, p in records[:k]]
    assert len(warnings) == 1 and f"damaged record at byte {offset_k}" in warnings[0]
    # reading resumes at the next block: everything there is intact and in order
    # reading resumes at the next block; records starting there or later are all recovered
    next_block = (offset_k // BLOCK_SIZE + 1) * BLOCK_SIZE
    after = [p for o, p in records if o >= next_block]
    assert [p for _, p in got[k:]] == after
    assert k + len(after) < len(records)


def test_not_a_wandb_file_is_refused(tmp_path):
    bogus = tmp_path / "run-x.wandb"
    bogus.write_bytes(b"PK\x03\x04 not a log")
    with pytest.raises(InvalidEvidence, match="not a W&B transaction log"):
        load_run(bogus)


def test_garbage_after_header_warns_without_crashing(tmp_path):
    path = tmp_path / "run-g.wandb"
    path.write_bytes(FILE_HEADER + bytes(range(1, 200)))
    got, warnings = _records(path)
    assert got == [] and warnings and re.search(r"byte \d+", warnings[0])


def test_records_spanning_blocks_round_trip(tmp_path):
    payloads = [bytes([i % 251]) * n for i, n in enumerate([10, BLOCK_SIZE, 3 * BLOCK_SIZE + 5, 0, 7, 100])]
    path = tmp_path / "run-big.wandb"
    with open(path, "wb") as f:
        write_records(f, iter(payloads))
    got, warnings = _records(path)
    assert warnings == [] and [p for _, p in got] == payloads


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3 * BLOCK_SIZE), min_size=1, max_size=12),
       st.integers(min_value=0, max_value=10**9))
def test_any_record_sizes_round_trip_and_truncation_keeps_a_prefix(tmp_path_factory, sizes, seed):
    payloads = [bytes([(seed + i) % 256]) * n for i, n in enumerate(sizes)]
    path = tmp_path_factory.mktemp("prop") / "run-p.wandb"
    with open(path, "wb") as f:
        write_records(f, iter(payloads))
    got, warnings = _records(path)
    assert warnings == [] and [p for _, p in got] == payloads
    data = path.read_bytes()
    cut = 7 + seed % max(len(data) - 7, 1)
    path.write_bytes(data[:cut])
    partial, _ = _records(path)
    kept = [p for _, p in partial]
    assert kept == payloads[: len(kept)]


@pytest.mark.torch
def test_cursor_reads_a_growing_file_in_pieces_exactly_once(wandb_runs, tmp_path):
    """The file grows in uneven pieces (cut mid-record, mid-chunk-header, across blocks): each read
    returns only the records completed since the last, the union is the whole file, and no read goes
    back further than the block holding the cursor."""
    source = wandb_runs["watched"]["file"]
    data = source.read_bytes()
    records, _ = _records(source)
    growing = tmp_path / "run-growing.wandb"
    cursor = Cursor()
    got: list[tuple[int, bytes]] = []
    for cut in [*range(3, len(data), 7919), len(data)]:
        growing.write_bytes(data[:cut])
        before = cursor.offset
        warnings: list[str] = []
        if cut < len(FILE_HEADER):
            with pytest.raises(InvalidEvidence):
                list(iter_records(growing, warnings, cursor))
            continue
        new = list(iter_records(growing, warnings, cursor))
        assert warnings == []                              # a record still being written is no damage
        assert cursor.records == len(new) and all(offset >= before for offset, _ in new)
        assert cursor.bytes_read <= cut - before + BLOCK_SIZE
        n = len(got) + len(new)
        assert new == records[len(got):n]
        if n < len(records):
            upcoming = records[n][0]
            assert n + 1 == len(records) or cut < records[n + 1][0]  # every complete record was read
            assert cursor.pending_at == (upcoming if cut > upcoming else None)
            assert cursor.offset <= upcoming and not any(data[cursor.offset:upcoming])
        got += new
    assert got == records and cursor.offset == len(data)
    growing.write_bytes(data)
    assert list(iter_records(growing, [], cursor)) == [] and cursor.records == 0
