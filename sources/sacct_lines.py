"""Splitting ``sacct --parsable2`` output into fields, the way real accounting needs it.

- **Bytes, not text.** sacct prints whatever bytes users put in job names. Each line is decoded
  as UTF-8; a line that is not UTF-8 is decoded with U+FFFD replacements and its raw bytes are
  kept on the row (``raw_line``) as evidence, with a ``read_note`` saying so.
- **Free text holds the delimiter.** JobName is chosen by users and may contain ``|``. A line
  with more fields than the header is rebuilt by counting the fixed fields from both ends:
  everything between them is the job name. Only a line with too few fields is quarantined.
- **The header names the columns.** A saved file is read by its header line: columns in any
  order, extra columns ignored, a missing required column named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contracts.schemas import SACCT_FIELDS

__all__ = ["FIXED_LAYOUT", "FREE_TEXT_FIELD", "Layout", "LineError", "decode_line", "header_layout", "split_line"]

# The one sacct field of our --format list whose value users choose freely (may hold "|").
FREE_TEXT_FIELD = "JobName"


class LineError(ValueError):
    """A line that cannot be split into the layout's fields; the message says why."""


class HeaderError(ValueError):
    """A header line that does not carry the fields cardhours needs; the message names them."""


@dataclass(frozen=True)
class Layout:
    """Where each required sacct field sits on a line."""

    names: tuple[str, ...]  # every column of the line, in order (extra ones included)
    position: dict[str, int]  # required field -> its column

    @property
    def extras(self) -> tuple[str, ...]:
        """Columns that are not cardhours' own (any may hold free text, so surplus can't be placed)."""
        return tuple(name for name in self.names if name not in self.position)

    @property
    def free(self) -> int | None:
        return None if self.extras else self.position.get(FREE_TEXT_FIELD)


FIXED_LAYOUT = Layout(tuple(SACCT_FIELDS), {name: i for i, name in enumerate(SACCT_FIELDS)})


def header_layout(header: Sequence[str]) -> Layout:
    """The layout a header line describes; HeaderError naming missing or repeated columns."""
    names = tuple(name.strip() for name in header)
    repeated = sorted({name for name in names if names.count(name) > 1 and name in SACCT_FIELDS})
    if repeated:
        raise HeaderError(f"column(s) {', '.join(repeated)} appear more than once in the header")
    missing = [name for name in SACCT_FIELDS if name not in names]
    if missing:
        raise HeaderError(f"required column(s) {', '.join(missing)} missing from the header")
    return Layout(names, {name: names.index(name) for name in SACCT_FIELDS})


def decode_line(data: bytes) -> tuple[str, str | None]:
    """(text, note): UTF-8 text of a line; note is None unless bytes had to be replaced."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 4].hex(" ")
        note = f"not UTF-8 (byte {exc.start + 1}: {bad}); undecodable bytes replaced with U+FFFD"
        return data.decode("utf-8", errors="replace"), note


def split_line(line: str, layout: Layout) -> tuple[dict[str, str], str | None]:
    """(required field -> value, note) for one line; LineError when it has too few fields.

    With more fields than the layout, the fixed fields are counted from both ends and the
    surplus is given back to the free-text field (its ``|`` restored). Without a free-text
    field in the layout (or with columns besides cardhours' own, which may hold free text too),
    a line with extra fields cannot be placed and is an error.
    """
    parts = line.split("|")
    width = len(layout.names)
    note = None
    if len(parts) < width or (len(parts) > width and layout.free is None):
        why = ""
        if len(parts) > width and layout.extras:
            why = f"; a '|' cannot be placed while the file has other columns ({', '.join(layout.extras)})"
        raise LineError(f"line has {len(parts)} fields, expected {width}{why}")
    if len(parts) > width:
        free = layout.free
        tail = width - free - 1  # fields after the free-text one
        surplus = len(parts) - width
        name = "|".join(parts[free : len(parts) - tail])
        parts = [*parts[:free], name, *parts[len(parts) - tail :]]
        note = f"{FREE_TEXT_FIELD} holds {surplus} '|'; fields counted from both ends"
    return {field: parts[i] for field, i in layout.position.items()}, note
