"""Hostile archives are refused before anything is written."""

from __future__ import annotations

import io
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from incidents.evidence import archives
from incidents.evidence.archives import UnsafeArchive, extract


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


def _tar(path: Path, add) -> Path:
    with tarfile.open(path, "w:gz") as t:
        info = tarfile.TarInfo("run/ok.txt")
        info.size = 2
        t.addfile(info, io.BytesIO(b"ok"))
        add(t)
    return path


def _assert_refused(archive: Path, dest: Path, match: str, **limits) -> None:
    with pytest.raises(UnsafeArchive, match=match):
        extract(archive, dest, **limits)
    assert not dest.exists() or not any(dest.rglob("*"))


def test_safe_zip_and_tar_extract(tmp_path):
    z = _zip(tmp_path / "a.zip", {"run/files/a.txt": b"hello", "run/b.bin": b"\0" * 10})
    members = extract(z, tmp_path / "z")
    assert (tmp_path / "z/run/files/a.txt").read_bytes() == b"hello" and len(members) == 2
    t = _tar(tmp_path / "a.tar.gz", lambda t: None)
    extract(t, tmp_path / "t")
    assert (tmp_path / "t/run/ok.txt").read_bytes() == b"ok"


@pytest.mark.parametrize("name", ["../evil.txt", "run/../../evil.txt", "/etc/evil", "C:/evil", "..\\evil"])
def test_zip_path_escapes_are_refused(tmp_path, name):
    z = _zip(tmp_path / "bad.zip", {"run/fine.txt": b"x", name: b"boom"})
    _assert_refused(z, tmp_path / "out", "absolute path|outside the archive")
    assert not (tmp_path / "evil.txt").exists()


def test_zip_symlink_is_refused(tmp_path):
    z = _zip(tmp_path / "link.zip", {"run/fine.txt": b"x"}, link="run/passwd")
    _assert_refused(z, tmp_path / "out", "link or special file")


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_tar_links_and_devices_are_refused(tmp_path, kind):
    def add(t):
        info = tarfile.TarInfo("run/special")
        info.type = kind
        info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
        t.addfile(info)

    _assert_refused(_tar(tmp_path / "s.tar.gz", add), tmp_path / "out", "link|device")


def test_tar_absolute_and_parent_paths_are_refused(tmp_path):
    for name in ("/tmp/evil", "../evil"):
        def add(t, name=name):
            info = tarfile.TarInfo(name)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))

        _assert_refused(_tar(tmp_path / "p.tar.gz", add), tmp_path / "out", "absolute path|outside")


def test_expanded_size_limit_is_checked_before_writing(tmp_path):
    z = _zip(tmp_path / "big.zip", {"run/a.bin": b"\0" * 600_000, "run/b.bin": b"\0" * 600_000})
    assert (tmp_path / "big.zip").stat().st_size < 10_000
    _assert_refused(z, tmp_path / "out", "expands past", max_bytes=1_000_000)
    assert archives.DEFAULT_MAX_BYTES == 2 * 1024**3


def test_understated_zip_sizes_are_caught_while_writing(tmp_path):
    z = _zip(tmp_path / "liar.zip", {"run/a.bin": b"\0" * 200_000})
    data = bytearray(z.read_bytes())
    # Lower the declared uncompressed size in the central directory (offset 24 of its entry).
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 24: cd + 28] = (1000).to_bytes(4, "little")
    z.write_bytes(bytes(data))
    with pytest.raises((UnsafeArchive, zipfile.BadZipFile)):
        extract(z, tmp_path / "out", max_bytes=50_000)
    assert not (tmp_path / "out").exists()


def test_member_count_limit(tmp_path):
    z = _zip(tmp_path / "many.zip", {f"run/{i}.txt": b"" for i in range(11)})
    _assert_refused(z, tmp_path / "out", "more than 10 members", max_members=10)
    t = tarfile.open(tmp_path / "many.tar.gz", "w:gz")
    for i in range(11):
        t.addfile(tarfile.TarInfo(f"run/{i}"), io.BytesIO(b""))
    t.close()
    _assert_refused(tmp_path / "many.tar.gz", tmp_path / "out2", "more than 10 members", max_members=10)


def _zip_of_empty_files(path: Path, n: int) -> Path:
    """A valid ZIP64 archive of ``n`` empty stored files, laid out by hand (zipfile is too slow)."""
    local, central = [], []
    offset = 0
    for i in range(n):
        name = str(i).encode()
        head = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
        central.append(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 45, 20, 0, 0, 0, 0, 0, 0, 0,
                                   len(name), 0, 0, 0, 0, 0, offset) + name)
        local.append(head)
        offset += len(head)
    cd = b"".join(central)
    zip64_end = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, len(cd), offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, offset + len(cd), 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    path.write_bytes(b"".join(local) + cd + zip64_end + locator + end)
    return path


def test_default_member_limit_is_10000(tmp_path):
    small = _zip_of_empty_files(tmp_path / "small.zip", 3)
    assert zipfile.ZipFile(small).namelist() == ["0", "1", "2"]
    _assert_refused(_zip_of_empty_files(tmp_path / "huge.zip", 10_001), tmp_path / "out",
                    "more than 10,000 members")


def test_members_nested_too_deep_are_refused(tmp_path):
    deep = "/".join(["d"] * 33) + "/f.txt"
    _assert_refused(_zip(tmp_path / "deep.zip", {deep: b"x"}), tmp_path / "out", "nested more than 32 folders")
    _zip(tmp_path / "ok.zip", {"/".join(["d"] * 32) + "/f.txt": b"x"})
    extract(tmp_path / "ok.zip", tmp_path / "ok")


def test_duplicate_members_are_refused(tmp_path):
    path = tmp_path / "dup.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for _ in range(2):
            info = tarfile.TarInfo("run/a.txt")
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
    _assert_refused(path, tmp_path / "out", "appears twice")
