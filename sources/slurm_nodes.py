"""Reading Slurm node records: ``scontrol show node --oneliner`` (command mode) or its saved
output (file mode), into ``SLURM_NODE_SCHEMA`` rows: each node's GPU GRES, state and reason.

A line is ``Key=Value`` fields separated by spaces; values may hold spaces (``OS=Linux 6.1 #1
SMP``), so a field starts only where a space is followed by ``Key=``. ``Reason=`` is the last
field and runs to the end of the line (a reason is free text). A line without ``NodeName=``,
``State=`` or ``Gres=``, or whose GPU GRES does not read as ``gpu[:type]:count``, is quarantined
with a reason naming the file and line; nothing is dropped silently.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from config.cluster import SlurmConfig
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.slurm_nodes import SLURM_NODE_SCHEMA, SLURM_NODES_SOURCE

__all__ = ["SlurmNodesError", "parse_scontrol_nodes", "read_nodes", "read_scontrol_nodes_file", "run_scontrol_nodes"]

_FIELD = re.compile(r"(?:^|\s)([A-Z][A-Za-z_]*)=")
_GRES = re.compile(r"^(?P<name>[a-z_]+)(?::(?P<type>[^:()]+))?:(?P<count>\d+)(?:\((?:S|IDX):[^)]*\))?$")
# a GPU instance profile, last in the type; a compute instance's ("1c.3g.20gb": a share of a GPU
# instance, not one) is no match
_MIG = re.compile(r"(?:^|[_-]|(?<!\dc)\.)(?P<profile>\d+g\.\d+gb(?:\+me)?)$", re.IGNORECASE)
_MIG_LIKE = re.compile(r"\d+g\.\d+gb", re.IGNORECASE)  # a type naming a MIG profile somewhere
_ENTRY_SEPARATOR = re.compile(r",(?![^(]*\))")  # commas between entries, not inside "(S:0,2)"
_NONE = {"", "(null)"}


class SlurmNodesError(RuntimeError):
    """scontrol could not be run, or a saved output could not be read."""


def run_scontrol_nodes(command: str, timeout: float = 120) -> tuple[str, datetime]:
    """Command mode: ``<command> show node --oneliner`` with ``TZ=UTC``; (stdout, UTC time read)."""
    argv = [*shlex.split(command), "show", "node", "--oneliner"]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env={**os.environ, "TZ": "UTC"}, timeout=timeout, check=False
        )
    except FileNotFoundError as exc:
        raise SlurmNodesError(
            f"scontrol command not found: {argv[0]!r}; set it in the cluster's [slurm] section"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise SlurmNodesError(f"scontrol did not answer within {timeout:.0f} s: {' '.join(argv)}") from exc
    if done.returncode != 0:
        raise SlurmNodesError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[:500]}")
    return done.stdout, datetime.now(UTC).replace(tzinfo=None)


def read_nodes(slurm: SlurmConfig, cluster: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The node records ``[clusters.slurm]`` names: ``scontrol_command`` run now, else ``nodes_file``
    as read at ``nodes_read_at`` (default: its modification time). (rows, quarantined lines)."""
    if slurm.scontrol_command is not None:
        text, read_at = run_scontrol_nodes(slurm.scontrol_command)
        return parse_scontrol_nodes(text, source=slurm.scontrol_command, cluster=cluster, read_at=read_at)
    if slurm.nodes_file is None:
        raise SlurmNodesError(f"{cluster}: [clusters.slurm] names no scontrol_command or nodes_file")
    return read_scontrol_nodes_file(slurm.nodes_file, cluster=cluster, read_at=slurm.nodes_read_at)


def read_scontrol_nodes_file(
    path: str | Path, *, cluster: str, read_at: datetime | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """File mode: a saved ``scontrol show node --oneliner``; ``read_at`` defaults to the file's mtime (UTC)."""
    path = Path(path)
    if not path.is_file():
        raise SlurmNodesError(f"scontrol node file not found: {path}; save `scontrol show node --oneliner` there")
    if read_at is None:
        read_at = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None, microsecond=0)
    text = path.read_bytes().decode("utf-8", errors="replace")
    return parse_scontrol_nodes(text, source=str(path), cluster=cluster, read_at=read_at)


def parse_scontrol_nodes(
    text: str, *, source: str, cluster: str, read_at: datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, quarantined lines) from ``scontrol show node --oneliner`` output."""
    rows: list[dict[str, object]] = []
    rejects: list[dict[str, object]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.strip() == "No nodes in the system":
            continue
        try:
            fields = _fields(line)
            node, state = fields["NodeName"], fields["State"]
            gres = _gpu_gres(fields["Gres"])
        except KeyError as exc:
            rejects.append(_reject(cluster, source, line_no, f"no {exc.args[0]}= field", line))
            continue
        except ValueError as exc:
            rejects.append(_reject(cluster, source, line_no, str(exc), line))
            continue
        reason = fields.get("Reason", "")
        base = {"cluster": cluster, "hostname": node, "state": state, "reason": reason, "read_at": read_at}
        for gpu_type, profile, count in gres or [(None, None, 0)]:
            rows.append(base | {"gpu_type": gpu_type, "mig_profile": profile, "gpus": count, "line_no": line_no})
    frame = pl.DataFrame(rows, schema={k: v for k, v in SLURM_NODE_SCHEMA.items() if k != "source"})
    frame = frame.with_columns(pl.lit(source).alias("source")).select(list(SLURM_NODE_SCHEMA))
    return frame, pl.DataFrame(rejects, schema=QUARANTINE_SCHEMA)


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` fields of one line; ``Reason`` takes the rest of the line."""
    reason_at = line.find(" Reason=")
    head, reason = (line[:reason_at], line[reason_at + len(" Reason=") :]) if reason_at >= 0 else (line, None)
    marks = list(_FIELD.finditer(head))
    fields = {
        m.group(1): head[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(head)].strip()
        for i, m in enumerate(marks)
    }
    if reason is not None:
        fields["Reason"] = reason.strip()
    return fields


def _gpu_gres(gres: str) -> list[tuple[str | None, str | None, int]]:
    """The GPU entries of ``Gres=``: (type or None, MIG profile or None, count), in order."""
    if gres in _NONE:
        return []
    found = []
    for entry in _ENTRY_SEPARATOR.split(gres):
        match = _GRES.match(entry.strip())
        if match is None:
            if entry.strip().startswith("gpu"):
                raise ValueError(f"GPU GRES {entry.strip()!r} is not gpu[:type]:count")
            continue
        if match["name"] != "gpu":
            continue
        gpu_type = match["type"]
        mig = _MIG.search(gpu_type) if gpu_type else None
        if mig is None and gpu_type and _MIG_LIKE.search(gpu_type):
            raise ValueError(
                f"GPU GRES type {gpu_type!r} names a MIG profile cardhours cannot read (expected it last, after "
                "'_', '.' or '-', as in a100_3g.20gb): not counted as whole GPUs"
            )
        found.append((gpu_type, mig["profile"].lower() if mig else None, int(match["count"])))
    return found


def _reject(cluster: str, source: str, line_no: int, reason: str, line: str) -> dict[str, object]:
    return {
        "cluster": cluster,
        "source": SLURM_NODES_SOURCE,
        "partition_key": "",
        "location": f"{source}:{line_no}",
        "reason": reason,
        "payload": json.dumps({"line": line}),
        "n_rows": 1,
    }
