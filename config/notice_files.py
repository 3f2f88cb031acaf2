"""The files ``[notices]`` names, read when notices are prepared: the address map and the opt-out list.

``read_addresses(path)``: a CSV with the header line ``user,email`` (more columns are ignored),
one user a line; blank lines are skipped. ``read_opt_out(path)``: one user name a line, ``#``
starts a comment. A bad line is a ``NoticeFileError`` naming the file and the line and what to fix;
nothing is guessed.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from config.alerts import _check_address

HEADER = ("user", "email")


class NoticeFileError(ValueError):
    """A file of ``[notices]`` could not be used; the text names the file and line."""


def _text(path: Path, key: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NoticeFileError(f"{path}: no such file ([notices] {key}): create it or remove the key") from None
    except (OSError, UnicodeDecodeError) as error:
        raise NoticeFileError(f"{path}: cannot be read as UTF-8 text ([notices] {key}): {error}") from None


def read_addresses(path: Path) -> dict[str, str]:
    """user -> e-mail address from ``path`` (``[notices] addresses_file``)."""
    rows = list(csv.reader(io.StringIO(_text(path, "addresses_file"), newline="")))
    header = tuple(cell.strip().lower() for cell in rows[0][:2]) if rows else ()
    if header != HEADER:
        raise NoticeFileError(f"{path}:1: the first line must be the header 'user,email' (got {','.join(header)!r})")
    addresses: dict[str, str] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        addresses.update([_address_line(path, number, row, addresses)])
    return addresses


def _address_line(path: Path, number: int, row: list[str], seen: dict[str, str]) -> tuple[str, str]:
    where = f"{path}:{number}"
    if len(row) < 2 or not row[0].strip() or not row[1].strip():
        raise NoticeFileError(f"{where}: needs a user and an e-mail address, 'user,email' (got {','.join(row)!r})")
    user, email = row[0].strip(), row[1].strip()
    try:
        _check_address(email)
    except ValueError as error:
        raise NoticeFileError(f"{where}: user {user!r}: {error}") from None
    if user in seen:
        raise NoticeFileError(f"{where}: user {user!r} is listed twice (an earlier line gives {seen[user]}): keep one")
    return user, email


def read_opt_out(path: Path) -> set[str]:
    """The user names in ``path`` (``[notices] opt_out_file``)."""
    users: set[str] = set()
    for number, line in enumerate(_text(path, "opt_out_file").splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if any(c.isspace() or c == "," for c in name):
            raise NoticeFileError(f"{path}:{number}: {name!r} is not one user name: write one user a line")
        users.add(name)
    return users
