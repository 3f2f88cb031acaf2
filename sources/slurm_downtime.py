"""Reading Slurm's downtime records from slurmdbd: node events and reservations.

Command mode runs ``sacctmgr`` (with ``TZ=UTC``) for a window; file mode reads a saved
``sacctmgr --parsable2`` output with its header line. Both give text rows, one per line, with
the line's location kept; a line that cannot be split is returned as a quarantine row (reason
``SHORT_LINE: ...``), never dropped. The values are parsed, mapped to states and clipped to the
day by ``transforms/staging/stg_slurm__downtime.py``.

Why slurmdbd (``sacctmgr show reservation``) and not ``scontrol show reservation``: slurmctld
forgets a reservation once it has ended, so a day landed (or read again by ``--reingest``) after
its reservations ended would find none; slurmdbd keeps every reservation with its times, nodes
and flags, and records a modified one as a new interval.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
from datetime import datetime
from pathlib import Path

import polars as pl

from config.cluster import SlurmConfig
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.slurm_downtime import EVENTS, RESERVATIONS, Record
from contracts.sources import SLURM_DOWNTIME

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


class DowntimeReadError(RuntimeError):
    """sacctmgr could not be run, or a saved file is not what cardhours reads."""


SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    record.entity: {**{c: pl.String() for c in record.columns}, "location": pl.String()}
    for record in (EVENTS, RESERVATIONS)
}


def sacctmgr_arguments(record: Record, start: datetime, end: datetime, slurm_cluster: str) -> list[str]:
    """The exact sacctmgr arguments for a window (docs/slurm.md)."""
    return [
        "--parsable2",
        "--noheader",
        "show",
        record.entity,
        *record.filters,
        f"clusters={slurm_cluster}",
        f"start={start.strftime(_TIME_FORMAT)}",
        f"end={end.strftime(_TIME_FORMAT)}",
        f"format={record.format}",
    ]


def run_sacctmgr(
    command: str, record: Record, start: datetime, end: datetime, slurm_cluster: str, timeout: float = 300
) -> bytes:
    """Run sacctmgr with ``TZ=UTC``; its stdout (no header line)."""
    argv = shlex.split(command) + sacctmgr_arguments(record, start, end, slurm_cluster)
    try:
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "TZ": "UTC"}, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise DowntimeReadError(f"sacctmgr command not found: {argv[0]!r} ([clusters.slurm] sacctmgr_command)") from exc
    except subprocess.TimeoutExpired as exc:
        raise DowntimeReadError(
            f"sacctmgr did not answer within {timeout:.0f} s: {' '.join(argv)}; check that slurmdbd is up and "
            "reachable from this host"
        ) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()[:500]
        raise DowntimeReadError(
            f"{' '.join(argv)} exited with {done.returncode}: {stderr}; check that slurmdbd is up and that this "
            "user may read events and reservations ([clusters.slurm] sacctmgr_command, slurm_cluster)"
        )
    return done.stdout


def window_source(record: Record, start: datetime, end: datetime, slurm_cluster: str) -> str:
    """How command-mode rows name where they came from."""
    return (
        f"sacctmgr show {record.entity} clusters={slurm_cluster} start={start:{_TIME_FORMAT}} end={end:{_TIME_FORMAT}}"
    )


def parse_records(
    data: bytes | str, record: Record, *, source: str, cluster: str, day_key: str, has_header: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, quarantined lines) of sacctmgr ``--parsable2`` output of one kind of record. With
    ``has_header`` the first line names the columns (sacctmgr's header or the format= names, any
    order, other columns ignored); without it they are ``record.fields`` in order."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lines = text.split("\n")
    positions, first, width = list(range(len(record.fields))), 1, len(record.fields)
    if has_header:
        header = lines[0].rstrip("\r") if lines else ""
        positions, width = _header_positions(header, record, source), len(header.split("|"))
        lines, first = lines[1:], 2
    rows: list[dict[str, str]] = []
    rejects: list[dict[str, object]] = []
    for line_no, line in enumerate(lines, start=first):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) > width and record.free_text_last and positions[-1] == width - 1:  # a last Reason holds '|'s
            parts = [*parts[: width - 1], "|".join(parts[width - 1 :])]
        if len(parts) != width:
            reason = f"SHORT_LINE: line has {len(parts)} fields, expected {width}"
            rejects.append(quarantine_row(cluster, day_key, f"{source}:{line_no}", reason, line))
            continue
        row = {column: parts[position] for column, position in zip(record.columns, positions, strict=True)}
        rows.append({**row, "location": f"{source}:{line_no}"})
    return pl.DataFrame(rows, schema=SCHEMAS[record.entity]), pl.DataFrame(rejects, schema=QUARANTINE_SCHEMA)


def _header_positions(header: str, record: Record, source: str) -> list[int]:
    names = [name.strip().lower() for name in header.split("|")]
    positions = []
    for field, printed in zip(record.fields, record.headers, strict=True):
        found = [i for i, name in enumerate(names) if name in (field.lower(), printed.lower())]
        if len(found) > 1:
            raise DowntimeReadError(
                f"{source}:1: column {printed} appears {len(found)} times in the header (columns "
                f"{', '.join(str(i + 1) for i in found)}); save the output of sacctmgr --parsable2 show "
                f"{record.entity} format={record.format}"
            )
        if not found:
            raise DowntimeReadError(
                f"{source}:1: column {printed} missing from the header; save the output of "
                f"sacctmgr --parsable2 show {record.entity} format={record.format}"
            )
        positions.append(found[0])
    return positions


def quarantine_row(cluster: str, day_key: str, location: str, reason: str, line: str) -> dict[str, object]:
    """A ``raw.quarantine`` row of the downtime source."""
    payload = json.dumps({"line": line})
    return {
        "cluster": cluster,
        "source": SLURM_DOWNTIME,
        "partition_key": day_key,
        "location": location,
        "reason": reason,
        "payload": payload,
        "n_rows": 1,
    }


def read_saved(path: str | Path, record: Record) -> tuple[pl.DataFrame, pl.DataFrame]:
    """File mode: every row and rejected line of a saved output (cluster and day left blank:
    the caller's). Parsed once while the file stays as it is (path, size, modification time)."""
    path = Path(path)
    if not path.is_file():
        raise DowntimeReadError(f"saved sacctmgr show {record.entity} output not found: {path}")
    stat = path.stat()
    return _parsed(str(path), record, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _parsed(path: str, record: Record, mtime_ns: int, size: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    del mtime_ns, size  # the cache key: a file written again is parsed again
    return parse_records(Path(path).read_bytes(), record, source=path, cluster="", day_key="", has_header=True)


def read_downtime(
    slurm: SlurmConfig, cluster: str, start: datetime, end: datetime
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(node events, reservations, quarantined lines) of a cluster's window, by the mode its
    ``[clusters.slurm]`` names: ``sacctmgr_command``, else ``events_file`` / ``reservations_file``
    (a file not named reads no records of its kind)."""
    assert slurm.slurm_cluster is not None
    day_key = start.date().isoformat()
    frames, rejects = [], []
    for record, path in ((EVENTS, slurm.events_file), (RESERVATIONS, slurm.reservations_file)):
        if slurm.sacctmgr_command is not None:
            data = run_sacctmgr(slurm.sacctmgr_command, record, start, end, slurm.slurm_cluster)
            where = window_source(record, start, end, slurm.slurm_cluster)
            rows, bad = parse_records(data, record, source=where, cluster=cluster, day_key=day_key, has_header=False)
        elif path is not None:
            rows, bad = read_saved(path, record)
            bad = bad.with_columns(pl.lit(cluster).alias("cluster"), pl.lit(day_key).alias("partition_key"))
        else:
            rows, bad = pl.DataFrame(schema=SCHEMAS[record.entity]), pl.DataFrame(schema=QUARANTINE_SCHEMA)
        frames.append(rows)
        rejects.append(bad)
    return frames[0], frames[1], pl.concat(rejects)
