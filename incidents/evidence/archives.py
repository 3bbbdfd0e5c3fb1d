"""Unpack an uploaded ``.zip`` / ``.tar.gz`` run archive without trusting it.

Every member is checked before the first byte is written: no absolute paths or ``..``, no
links, devices or FIFOs, at most ``max_members`` members, ``max_depth`` folders deep and
``max_bytes`` expanded in total. A zip's member count is read from its end record first, so an
archive of a hundred thousand members is refused before its directory is even parsed. Declared
sizes can lie (zip headers), so the writer also counts real bytes and removes what it wrote if
the limit is crossed. Archives inside the archive are never unpacked (they are just files).
"""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO

from hourtab.core import progress
from incidents.errors import InvalidEvidence

DEFAULT_MAX_BYTES = 2 * 1024**3
#: A W&B run folder holds tens of files (thousands with logged media); each member costs a file
#: write and a directory entry, so a hundred thousand empty ones held a worker for minutes.
DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_DEPTH = 32
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
_COPY_CHUNK = 1 << 20
#: wandb/latest-run is a symlink, so archiving the whole wandb/ folder trips the link check.
LINK_HINT = ("Archive the run folder itself (wandb/offline-run-…), or follow links when archiving "
             "(tar --dereference, zip without -y).")


class UnsafeArchive(InvalidEvidence):
    """The archive was refused; nothing from it was written."""


class DamagedArchive(UnsafeArchive):
    """The archive's own checks failed while reading it (CRC, sizes, compressed stream)."""


#: What zipfile, tarfile and their decompressors raise on damaged input.
_DAMAGE = (zipfile.BadZipFile, tarfile.TarError, zlib.error, lzma.LZMAError, EOFError, NotImplementedError)


def _reason(error: BaseException) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


@dataclass(frozen=True)
class Member:
    name: str          # normalised relative POSIX path
    size: int
    is_dir: bool


def is_archive(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(ARCHIVE_SUFFIXES)


def safe_member_name(name: str) -> str:
    """A relative, normalised path, or ``UnsafeArchive`` naming the offending member."""
    raw = name.replace("\\", "/")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":") or "\0" in raw:
        raise UnsafeArchive(f"archive member {name!r} has an absolute path; refused, nothing was written")
    parts = [p for p in PurePosixPath(raw).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafeArchive(f"archive member {name!r} points outside the archive (..); refused, nothing was written")
    if not parts:
        raise UnsafeArchive(f"archive member {name!r} has an empty path; refused, nothing was written")
    return "/".join(parts)


def tar_folder(folder: Path, target: Path) -> None:
    """Keep a run folder as ``target`` (.tar.gz): regular files and folders only, as ingest accepts."""
    with tarfile.open(target, "w:gz") as tar:
        tar.add(folder, arcname=folder.name, filter=lambda info: info if info.isfile() or info.isdir() else None)


def _too_many(max_members: int) -> UnsafeArchive:
    return UnsafeArchive(f"archive has more than {max_members:,} members; refused, nothing was written")


def _zip_member_count(path: Path) -> int | None:
    """The member count a zip's end-of-central-directory record declares (None if it has none).

    ``zipfile`` reads this record first when it opens an archive, then parses every directory
    entry; asking for the record alone costs one seek, however many members the archive has.
    """
    with open(path, "rb") as f:
        # The stdlib's own reader of that record; private, so typeshed does not list it.
        end = zipfile._EndRecData(f)  # type: ignore[attr-defined]  # noqa: SLF001
    return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]  # noqa: SLF001


def list_members(path: Path, max_members: int = DEFAULT_MAX_MEMBERS,
                 max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH) -> list[Member]:
    """Validate every member of the archive; raise before anything is extracted."""
    listing = _Listing(max_members, max_bytes, max_depth)
    entries = _zip_entries(path, max_members) if zipfile.is_zipfile(path) else _tar_entries(path)
    with closing(entries):    # a refused member closes the archive at once, not when collected
        for name, size, is_dir in entries:
            listing.add(name, size, is_dir)
    return listing.members


@dataclass
class _Listing:
    """The members validated so far, against the limits on their number, total size and depth."""

    max_members: int
    max_bytes: int
    max_depth: int
    members: list[Member] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    total: int = 0

    def add(self, name: str, size: int, is_dir: bool) -> None:
        if len(self.members) >= self.max_members:
            raise _too_many(self.max_members)
        self.total += size
        if self.total > self.max_bytes:
            raise UnsafeArchive(f"archive expands past {_human(self.max_bytes)}; refused, nothing was written")
        # ``tar -C folder -czf run.tar.gz .`` writes the archive's own root first, as "./".
        root = is_dir and name.replace("\\", "/").rstrip("/") == "."
        member = Member("." if root else safe_member_name(name), size, is_dir)
        if member.name.count("/") > self.max_depth:
            raise UnsafeArchive(f"archive member {name[:200]!r} is nested more than {self.max_depth} folders "
                                "deep; refused, nothing was written")
        if not is_dir and member.name in self.seen:
            raise UnsafeArchive(f"archive member {name!r} appears twice; refused, nothing was written")
        self.seen.add(member.name)
        self.members.append(member)


def _zip_entries(path: Path, max_members: int) -> Generator[tuple[str, int, bool]]:
    """(name, size, is folder) of each zip member; links and special files refused."""
    if (_zip_member_count(path) or 0) > max_members:
        raise _too_many(max_members)
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise DamagedArchive(f"{path.name} is a damaged .zip archive ({e}); nothing was kept") from e
    with z:
        infos = z.infolist()
        if len(infos) > max_members:
            raise _too_many(max_members)
        for info in infos:
            mode = info.external_attr >> 16
            if mode and (stat.S_ISLNK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                         or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise UnsafeArchive(f"archive member {info.filename!r} is a link or special file; "
                                    f"refused, nothing was written. {LINK_HINT}")
            yield info.filename, info.file_size, info.is_dir()


def _tar_entries(path: Path) -> Generator[tuple[str, int, bool]]:
    """(name, size, is folder) of each tar member; links and special files refused."""
    try:
        with tarfile.open(path, "r:*") as t:
            while (member := t.next()) is not None:
                if member.issym() or member.islnk():
                    raise UnsafeArchive(f"archive member {member.name!r} is a link; refused, nothing was written. "
                                        f"{LINK_HINT}")
                if not (member.isfile() or member.isdir()):
                    raise UnsafeArchive(f"archive member {member.name!r} is a device, FIFO or other special "
                                        "file; refused, nothing was written")
                yield member.name, member.size, member.isdir()
    except (tarfile.TarError, EOFError, OSError) as e:
        detail = "" if "\n" in str(e) else f" ({_reason(e)})"   # tarfile lists every method it tried
        raise InvalidEvidence(f"{path.name} is not a readable .zip or .tar.gz archive{detail}") from e


def extract(path: Path, dest: Path, max_members: int = DEFAULT_MAX_MEMBERS,
            max_bytes: int = DEFAULT_MAX_BYTES) -> list[Member]:
    """Check, then extract into ``dest`` (created; must not exist or be empty)."""
    members = list_members(path, max_members, max_bytes)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise InvalidEvidence(f"extraction folder {dest} is not empty")
    written = 0
    expanded = sum(m.size for m in members if not m.is_dir)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for zip_info, member in zip(z.infolist(), members, strict=True):
                    written = _write(member, dest, partial(z.open, zip_info), written, max_bytes)
                    progress.report("Unpacking", written, expanded)
        else:
            with tarfile.open(path, "r:*") as t:
                for tar_info, member in zip(_iter_tar(t), members, strict=True):
                    written = _write(member, dest, partial(t.extractfile, tar_info), written, max_bytes)
                    progress.report("Unpacking", written, expanded)
    except _DAMAGE as e:          # a flipped CRC, a size the header understates, a cut-off stream
        shutil.rmtree(dest, ignore_errors=True)
        raise DamagedArchive(f"{path.name} is a damaged archive ({_reason(e)}); nothing was kept") from e
    except OSError as e:          # e.g. a file and a folder of the same name
        shutil.rmtree(dest, ignore_errors=True)
        raise UnsafeArchive(f"archive could not be unpacked safely ({e.strerror or _reason(e)}); "
                            "nothing was kept") from e
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return members


def _iter_tar(t: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while (info := t.next()) is not None:
        yield info


def _write(member: Member, dest: Path, opener: Callable[[], IO[bytes] | None], written: int, max_bytes: int) -> int:
    target = dest / member.name
    if member.is_dir:
        target.mkdir(parents=True, exist_ok=True)
        return written
    target.parent.mkdir(parents=True, exist_ok=True)
    source = opener()
    if source is None:      # tar lists it as a file but holds no data for it (a special member)
        raise UnsafeArchive(f"archive member {member.name} has no contents to unpack; nothing was kept")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with source as src, os.fdopen(fd, "wb") as out:
        while chunk := src.read(_COPY_CHUNK):
            written += len(chunk)
            if written > max_bytes:
                raise UnsafeArchive(f"archive expands past {_human(max_bytes)} (its headers understated "
                                    "the sizes); refused, nothing was kept")
            out.write(chunk)
    return written


def _human(n: int) -> str:
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"
