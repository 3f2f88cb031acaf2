"""Reading Slurm accounting: run ``sacct`` (command mode) or read its saved output (file mode).

Both modes produce the same raw rows (``RAW_SACCT_SCHEMA``): every field as text, one row per
sacct line, with the source and line number kept so a bad row can be traced back. Lines that
cannot be split into the fixed field list are returned as quarantine rows, never dropped.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shlex
import subprocess
from datetime import date, datetime
from pathlib import Path

import polars as pl

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, SACCT_FIELDS, SACCT_FORMAT
from sources.sacct_json import JsonError, json_rows, repair_text
from sources.sacct_lines import FIXED_LAYOUT, HeaderError, LineError, decode_line, header_layout, split_line

__all__ = [
    "SacctError",
    "parse_sacct_json",
    "parse_sacct_output",
    "parse_sacct_text",
    "read_sacct_file",
    "run_sacct",
    "sacct_arguments",
    "sacct_json_arguments",
    "window_source",
]

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


def sacct_json_arguments(start: datetime, end: datetime, slurm_cluster: str) -> list[str]:
    """The sacct arguments of ``--json`` mode (Slurm 21.08+): the same window and jobs."""
    return [
        "--json",
        "--allusers",
        "--duplicates",
        "-S",
        start.strftime(_TIME_FORMAT),
        "-E",
        end.strftime(_TIME_FORMAT),
        "-M",
        slurm_cluster,
    ]


def run_sacct(
    command: str, start: datetime, end: datetime, slurm_cluster: str, timeout: float = 600, *, json_output: bool = False
) -> bytes:
    """Run sacct with ``TZ=UTC`` and return its stdout as bytes (no header line).

    Bytes, because job names are whatever users typed: decoding is the parser's job, line by
    line, so one name that is not UTF-8 never costs the day."""
    arguments = (
        sacct_json_arguments(start, end, slurm_cluster) if json_output else sacct_arguments(start, end, slurm_cluster)
    )
    argv = shlex.split(command) + arguments
    env = {**os.environ, "TZ": "UTC"}
    try:
        done = subprocess.run(argv, capture_output=True, env=env, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise SacctError(f"sacct command not found: {argv[0]!r}") from exc
    except subprocess.TimeoutExpired as exc:
        raise SacctError(f"sacct did not answer within {timeout:.0f} s: {' '.join(argv)}") from exc
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()[:500]
        raise SacctError(f"sacct exited with {done.returncode}: {stderr}")
    return done.stdout


def window_source(start: datetime, end: datetime, slurm_cluster: str, json_output: bool = False) -> str:
    """How command-mode rows name where they came from: the sacct window asked for."""
    flag = "--json " if json_output else ""
    return f"sacct {flag}-M {slurm_cluster} -S {start.strftime(_TIME_FORMAT)} -E {end.strftime(_TIME_FORMAT)}"


def parse_sacct_text(
    data: bytes | str, *, source: str, cluster: str, day: date, has_header: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split sacct ``--parsable2`` output into raw rows and quarantined lines (sacct_lines has the rules).

    With ``has_header`` the first line names the columns (any order, extra ones ignored);
    without it the fields are cardhours' own ``--format`` list."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    layout, first_line = FIXED_LAYOUT, 1
    if has_header:
        if not lines or not lines[0].strip():
            raise SacctError(f"{source}: empty file, expected a header line")
        try:
            layout = header_layout(decode_line(lines[0].rstrip(b"\r"))[0].split("|"))
        except HeaderError as exc:
            raise SacctError(f"{source}:1: {exc}; save sacct output with --parsable2 --format={SACCT_FORMAT}") from exc
        lines, first_line = lines[1:], 2
    rows: list[dict[str, object]] = []
    rejects: list[dict[str, object]] = []
    for line_no, data_line in enumerate(lines, start=first_line):
        data_line = data_line.rstrip(b"\r")
        if not data_line.strip():
            continue
        text, decode_note = decode_line(data_line)
        evidence = data_line if decode_note else None
        try:
            values, split_note = split_line(text, layout)
        except LineError as exc:
            rejects.append(_reject(cluster, source, day, line_no, str(exc), text, evidence))
            continue
        note = "; ".join(n for n in (decode_note, split_note) if n) or None
        rows.append({**values, "line_no": line_no, "read_note": note, "raw_line": evidence})
    return raw_frame(rows, source, cluster, day), pl.DataFrame(rejects, schema=QUARANTINE_SCHEMA)


def parse_sacct_json(data: bytes, *, source: str, cluster: str, day: date) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split ``sacct --json`` output into raw rows (as ``--parsable2`` would give) and quarantined jobs."""
    try:
        entries = list(json_rows(data, source))
    except JsonError as exc:
        raise SacctError(str(exc)) from exc
    rows: list[dict[str, object]] = []
    rejects: list[dict[str, object]] = []
    for position, fields, problem in entries:
        if fields is None:
            rejects.append(
                _reject(cluster, source, day, position, problem or "unreadable", f"jobs[{position - 1}]", None)
            )
            continue
        fields, note, evidence = repair_text(fields)
        rows.append({**fields, "line_no": position, "read_note": note, "raw_line": evidence})
    return raw_frame(rows, source, cluster, day), pl.DataFrame(rejects, schema=QUARANTINE_SCHEMA)


def parse_sacct_output(
    data: bytes, *, source: str, cluster: str, day: date, has_header: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Either format, told apart by the first byte: ``{`` is ``--json``, anything else ``--parsable2``."""
    if data.lstrip()[:1] == b"{":
        return parse_sacct_json(data, source=source, cluster=cluster, day=day)
    return parse_sacct_text(data, source=source, cluster=cluster, day=day, has_header=has_header)


def _reject(
    cluster: str, source: str, day: date, line_no: int, reason: str, line: str, evidence: bytes | None
) -> dict[str, object]:
    payload: dict[str, str] = {"line": line}
    if evidence is not None:
        payload["raw_base64"] = base64.b64encode(evidence).decode("ascii")
    return {
        "cluster": cluster,
        "source": "sacct",
        "partition_key": day.isoformat(),
        "location": f"{source}:{line_no}",
        "reason": reason,
        "payload": json.dumps(payload),
        "n_rows": 1,
    }


def raw_frame(rows: list[dict[str, object]], source: str, cluster: str, day: date) -> pl.DataFrame:
    """RAW_SACCT_SCHEMA rows from dicts keyed by sacct field name (plus line_no, read_note, raw_line)."""
    data = {column: [row[field] for row in rows] for field, column in SACCT_FIELDS.items()}
    frame = pl.DataFrame(data, schema={column: pl.String() for column in SACCT_FIELDS.values()})
    frame = frame.with_columns(
        pl.lit(cluster).alias("cluster"),
        pl.lit(day).alias("day"),
        pl.lit(source).alias("source"),
        pl.Series("line_no", [row["line_no"] for row in rows], dtype=pl.Int64()),
        pl.Series("read_note", [row["read_note"] for row in rows], dtype=pl.String()),
        pl.Series("raw_line", [row["raw_line"] for row in rows], dtype=pl.Binary()),
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


def read_sacct_file(
    path: str | Path, *, cluster: str, day: date, start: datetime, end: datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """File mode: the rows of a saved ``sacct --parsable2`` output (with header) or ``sacct --json``
    output, for a window. The file is parsed once while it stays as it is (path, size and
    modification time): a day and the days its lookback reads again cost one parse."""
    path = Path(path)
    if not path.is_file():
        raise SacctError(f"sacct file not found: {path}")
    stat = path.stat()
    raw, rejects = _parsed_file(str(path), stat.st_mtime_ns, stat.st_size)
    raw = raw.with_columns(pl.lit(cluster).alias("cluster"), pl.lit(day).alias("day"))
    rejects = rejects.with_columns(pl.lit(cluster).alias("cluster"), pl.lit(day.isoformat()).alias("partition_key"))
    return overlapping_rows(raw, start, end), rejects


@functools.lru_cache(maxsize=1)
def _parsed_file(path: str, mtime_ns: int, size: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every row and rejected line of a saved file (cluster and day left blank: the caller's)."""
    del mtime_ns, size  # the cache key: a file written again is parsed again
    return parse_sacct_output(Path(path).read_bytes(), source=path, cluster="", day=date.min, has_header=True)
