"""Python-side parsers of single sacct values (time limits, hostlists) and how to apply such a
parser to a column: once per distinct value, with the error message kept per row."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import polars as pl

from contracts import hostlist


class SlurmParseError(ValueError):
    """A sacct field value that cannot be parsed."""


_UNLIMITED = {"UNLIMITED", "Partition_Limit", "NONE", ""}
_TIMELIMIT = re.compile(r"^(?:(?P<days>\d+)-)?(?P<clock>\d+(?::\d+){0,2})$")


def parse_timelimit(text: str | None) -> int | None:
    """Slurm time limit text -> seconds; None when unlimited/unset.

    Forms: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.
    """
    if text is None or text.strip() in _UNLIMITED:
        return None
    match = _TIMELIMIT.match(text.strip())
    if not match:
        raise SlurmParseError(f"cannot parse time limit {text!r}")
    parts = [int(p) for p in match.group("clock").split(":")]
    if match.group("days") is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]
        return ((int(match.group("days")) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(parts) == 3:
        return (parts[0] * 60 + parts[1]) * 60 + parts[2]
    minutes, seconds = (parts + [0])[:2]
    return minutes * 60 + seconds


def parse_hosts(text: str | None) -> list[str]:
    """A sacct NodeList expanded to host names (``None assigned`` -> [])."""
    try:
        return hostlist.expand(text)
    except hostlist.HostlistError as exc:
        raise SlurmParseError(str(exc)) from exc


# --- applying Python parsers to a column --------------------------------------------


def map_distinct(
    frame: pl.DataFrame,
    column: str,
    parse: Callable[[Any], Any],
    dtype: pl.DataType,
    out: str,
    error_field: str | None = None,
) -> pl.DataFrame:
    """``frame`` plus ``out`` = parse(value) and ``<out>_error``, parsing each distinct value once.

    The error column holds ``"<error_field>: <message>"`` where parse raised
    SlurmParseError, else null.
    """
    values, parsed, errors = frame.get_column(column).unique().to_list(), [], []
    for value in values:
        try:
            parsed.append(parse(value))
            errors.append(None)
        except SlurmParseError as exc:
            parsed.append(None)
            errors.append(f"{error_field or column}: {exc}")
    lookup = pl.DataFrame(
        {column: values, out: parsed, f"{out}_error": errors},
        schema={column: frame.schema[column], out: dtype, f"{out}_error": pl.String()},
    )
    return frame.join(lookup, on=column, how="left", nulls_equal=True, maintain_order="left")
