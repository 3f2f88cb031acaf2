"""Parsing helpers for sacct text fields (``sacct --parsable2``, see docs/design.md).

Column-wise fields (times, job ids, states) are polars expressions; fields whose grammar
needs Python (TRES, timelimit, hostlists) are plain functions that raise
``SlurmParseError`` with a message naming the bad value, meant to be applied to the
distinct values of a column (see ``map_distinct``).
"""

from __future__ import annotations

import polars as pl

from transforms.helpers.slurm_tres import GPU_ALLOC_DTYPE, MIG_SLICES, NO_GPUS, GpuAlloc, mig_profile, parse_gpu_tres
from transforms.helpers.slurm_values import SlurmParseError, map_distinct, parse_hosts, parse_timelimit

__all__ = [
    "SlurmParseError",
    "GpuAlloc",
    "NO_GPUS",
    "GPU_ALLOC_DTYPE",
    "UNSET_TIMES",
    "slurm_time",
    "slurm_time_error",
    "state_name",
    "state_detail",
    "JOB_ID_PATTERN",
    "job_id_parts",
    "parent_job_id_raw",
    "mig_profile",
    "parse_gpu_tres",
    "parse_timelimit",
    "parse_hosts",
    "map_distinct",
    "MIG_SLICES",
]

SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# What sacct prints for a time that has not happened (or does not apply).
UNSET_TIMES = ("Unknown", "None", "")


# --- times --------------------------------------------------------------------------


def slurm_time(column: str) -> pl.Expr:
    """The column parsed as naive UTC ``Datetime("us")``; null for Unknown/None/empty/bad."""
    return pl.col(column).str.strip_chars().str.strptime(pl.Datetime("us"), SLURM_TIME_FORMAT, strict=False)


def slurm_time_error(column: str) -> pl.Expr:
    """A reason string when the column holds text that is neither a time nor unset."""
    text = pl.col(column).str.strip_chars()
    bad = text.is_not_null() & ~text.is_in(UNSET_TIMES) & slurm_time(column).is_null()
    return pl.when(bad).then(pl.format(f"{column}: cannot parse time '{{}}'", pl.col(column)))


# --- states -------------------------------------------------------------------------


def state_name(column: str = "state") -> pl.Expr:
    """``CANCELLED by 1234`` -> ``CANCELLED``; a trailing ``+`` (truncation mark) is dropped."""
    return pl.col(column).str.strip_chars().str.extract(r"^(\S+)").str.strip_chars_end("+").str.to_uppercase()


def state_detail(column: str = "state") -> pl.Expr:
    """The text after the state word (``by 1234``), null when there is none."""
    return pl.col(column).str.strip_chars().str.extract(r"^\S+\s+(.+)$")


# --- job ids ------------------------------------------------------------------------

# 123 | 123_4 | 123_[5-1024%10] | 123+1 | any of these + .batch/.extern/.0/...
JOB_ID_PATTERN = (
    r"^(?P<base>\d+)"
    r"(?:_(?P<array_task>\d+|\[[^\]]+\]))?"
    r"(?:\+(?P<het_offset>\d+))?"
    r"(?:\.(?P<step>[^.]+))?$"
)


def job_id_parts(column: str = "job_id") -> pl.Expr:
    """A struct ``{base, array_task, het_offset, step}`` (all strings); all null if no match."""
    return pl.col(column).str.strip_chars().str.extract_groups(JOB_ID_PATTERN)


def parent_job_id_raw(column: str = "job_id_raw") -> pl.Expr:
    """``130.batch`` -> ``130``: the allocation a step row belongs to."""
    return pl.col(column).str.strip_chars().str.replace(r"\..*$", "")
