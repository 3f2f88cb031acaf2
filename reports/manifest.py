"""``<reports dir>/YYYY-MM/MANIFEST.sha256``: the SHA-256 of a closed month's export files.

The format of ``sha256sum``: one line per file, ``<64 hex digits><two spaces><file name>``,
names relative to the month's folder, sorted, so finance can check the files with
``cd <reports dir>/YYYY-MM && sha256sum -c MANIFEST.sha256``. Written by ``cardhours close``;
the chargeback export never rewrites the files of a month that has one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from reports.write import write_atomic_with

MANIFEST = "MANIFEST.sha256"
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, files: Iterable[Path]) -> Path:
    """Write ``folder/MANIFEST.sha256`` for ``files`` (all in ``folder``); returns its path."""
    paths = sorted(Path(f) for f in files)
    outside = [str(p) for p in paths if p.parent.resolve() != Path(folder).resolve()]
    if outside:
        raise ValueError(f"manifest files must be in {folder}: {outside}")
    text = "".join(f"{file_sha256(p)}  {p.name}\n" for p in paths)
    return write_atomic_with(Path(folder) / MANIFEST, lambda tmp: tmp.write_text(text, encoding="utf-8"))
