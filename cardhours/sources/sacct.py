"""Reading Slurm accounting: run ``sacct`` (command mode) or read its saved output (file mode).

Both modes produce the same raw rows (``RAW_SACCT_SCHEMA``): every field as text, one row per
sacct line, with the source and line number kept so a bad row can be traced back. Lines that
cannot be split into the fixed field list are returned as quarantine rows, never dropped.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from datetime import date, datetime
from pathlib import Path

import polars as pl

from cardhours.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, SACCT_FIELDS, SACCT_FORMAT

__all__ = ["SacctError", "parse_sacct_text", "read_sacct_file", "run_sacct", "sacct_arguments"]

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


class SacctError(RuntimeError):
    """sacct could not be run, or its output is not what cardhours asked for."""


def sacct_arguments(start: datetime, end: datetime, slurm_cluster: str) -> list[str]:
    """The exact sacct arguments cardhours uses for a window (documented in the README)."""
    return [
        "--parsable2",
        "--noheader",
        "--allusers",
        "--duplicates",
        f"--format={SACCT_FORMAT}",
        "-S",
        start.strftime(_TIME_FORMAT),
        "-E",
        end.strftime(_TIME_FORMAT),
        "-M",
        slurm_cluster,
    ]


def run_sacct(command: str, start: datetime, end: datetime, slurm_cluster: str, timeout: float = 600) -> str:
    """Run sacct with ``TZ=UTC`` and return its stdout (no header line)."""
    argv = shlex.split(command) + sacct_arguments(start, end, slurm_cluster)
    env = {**os.environ, "TZ": "UTC"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise SacctError(f"sacct command not found: {argv[0]!r}") from exc
    except subprocess.TimeoutExpired as exc:
        raise SacctError(f"sacct did not answer within {timeout:.0f} s: {' '.join(argv)}") from exc
    if done.returncode != 0:
        raise SacctError(f"sacct exited with {done.returncode}: {done.stderr.strip()[:500]}")
    return done.stdout


def parse_sacct_text(
    text: str, *, source: str, cluster: str, day: date, has_header: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split sacct ``--parsable2`` text into raw rows and quarantined lines."""
    lines = text.splitlines()
    fields = list(SACCT_FIELDS)
    first_line = 1
    if has_header:
        if not lines:
            raise SacctError(f"{source}: empty file, expected a header line")
        header = lines[0].split("|")
        if header != fields:
            raise SacctError(
                f"{source}:1: header {header} differs from the expected fields {fields}; "
                f"save sacct output with --parsable2 --format={SACCT_FORMAT}"
            )
        lines, first_line = lines[1:], 2
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    rejects: list[dict[str, object]] = []
    for offset, line in enumerate(lines):
        line_no = first_line + offset
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(fields):
            rejects.append(_reject(cluster, source, day, line_no, len(parts), len(fields), line))
            continue
        rows.append(parts)
        line_numbers.append(line_no)
    return _rows_frame(rows, line_numbers, source, cluster, day), pl.DataFrame(rejects, schema=QUARANTINE_SCHEMA)


def _reject(cluster: str, source: str, day: date, line_no: int, got: int, want: int, line: str) -> dict[str, object]:
    return {
        "cluster": cluster,
        "source": "sacct",
        "partition_key": day.isoformat(),
        "location": f"{source}:{line_no}",
        "reason": f"line has {got} fields, expected {want}",
        "payload": json.dumps({"line": line}),
        "n_rows": 1,
    }


def _rows_frame(rows: list[list[str]], line_numbers: list[int], source: str, cluster: str, day: date) -> pl.DataFrame:
    columns = list(SACCT_FIELDS.values())
    data = {name: [row[i] for row in rows] for i, name in enumerate(columns)}
    frame = pl.DataFrame(data, schema={name: pl.String() for name in columns})
    frame = frame.with_columns(
        pl.lit(cluster).alias("cluster"),
        pl.lit(day).alias("day"),
        pl.lit(source).alias("source"),
        pl.Series("line_no", line_numbers, dtype=pl.Int64()),
    )
    return frame.select([pl.col(c).cast(t) for c, t in RAW_SACCT_SCHEMA.items()])


def _parsed_time(column: str) -> pl.Expr:
    return pl.col(column).str.to_datetime(_TIME_FORMAT, strict=False, time_unit="us")


def overlapping_rows(raw: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """Rows sacct -S start -E end would report: active, or pending, at some time in the window.

    A row begins at its Start (or Submit while pending) and lasts until its End (open when
    Unknown). Rows whose times do not parse are kept (staging quarantines them with a reason).
    """
    begin = pl.coalesce(_parsed_time("start_time"), _parsed_time("submit_time"))
    finish = _parsed_time("end_time")
    unparsable = begin.is_null()
    inside = (begin < end) & (finish.is_null() | (finish >= start))
    return raw.filter(unparsable | inside)


def read_sacct_file(path: str | Path, *, cluster: str, day: date, start: datetime, end: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
    """File mode: the rows of a saved ``sacct --parsable2`` output (with header) for a window."""
    path = Path(path)
    if not path.is_file():
        raise SacctError(f"sacct file not found: {path}")
    raw, rejects = parse_sacct_text(path.read_text(), source=str(path), cluster=cluster, day=day, has_header=True)
    return overlapping_rows(raw, start, end), rejects
