"""Parsing helpers for sacct text fields (``sacct --parsable2``, see docs/design.md).

Column-wise fields (times, job ids, states) are polars expressions; fields whose grammar
needs Python (TRES, timelimit, hostlists) are plain functions that raise
``SlurmParseError`` with a message naming the bad value, meant to be applied to the
distinct values of a column (see ``map_distinct``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import polars as pl

from cardhours import hostlist

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
]

SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# What sacct prints for a time that has not happened (or does not apply).
UNSET_TIMES = ("Unknown", "None", "")
MIG_SLICES = 7  # compute slices of a full A100/H100/H200; override per profile with weights


class SlurmParseError(ValueError):
    """A sacct field value that cannot be parsed."""


# --- times --------------------------------------------------------------------------


def slurm_time(column: str) -> pl.Expr:
    """The column parsed as naive UTC ``Datetime("us")``; null for Unknown/None/empty/bad."""
    return (
        pl.col(column)
        .str.strip_chars()
        .str.strptime(pl.Datetime("us"), SLURM_TIME_FORMAT, strict=False)
    )


def slurm_time_error(column: str) -> pl.Expr:
    """A reason string when the column holds text that is neither a time nor unset."""
    text = pl.col(column).str.strip_chars()
    bad = text.is_not_null() & ~text.is_in(UNSET_TIMES) & slurm_time(column).is_null()
    return pl.when(bad).then(pl.format(f"{column}: cannot parse time '{{}}'", pl.col(column)))


# --- states -------------------------------------------------------------------------


def state_name(column: str = "state") -> pl.Expr:
    """``CANCELLED by 1234`` -> ``CANCELLED``; a trailing ``+`` (truncation mark) is dropped."""
    return (
        pl.col(column)
        .str.strip_chars()
        .str.extract(r"^(\S+)")
        .str.strip_chars_end("+")
        .str.to_uppercase()
    )


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


# --- GPUs from TRES -----------------------------------------------------------------


class GpuAlloc(NamedTuple):
    gpus: float  # whole GPUs; a MIG slice counts as its weight
    gpu_slots: int  # devices or MIG instances held
    gpu_type: str | None  # "h100", "3g.40gb"; sorted and comma-joined if several
    is_mig: bool


NO_GPUS = GpuAlloc(0.0, 0, None, False)
GPU_ALLOC_DTYPE = pl.Struct(
    {"gpus": pl.Float64(), "gpu_slots": pl.Int32(), "gpu_type": pl.String(), "is_mig": pl.Boolean()}
)

# "3g.40gb", "a100_3g.20gb", "nvidia_a100_3g.40gb", "1g.10gb+me"
_MIG_TYPE = re.compile(r"(?:^|_)(?P<profile>(?P<slices>[1-7])g\.\d+gb(?:\+me)?)$", re.IGNORECASE)


def mig_profile(gres_type: str) -> str | None:
    """The MIG profile named by a typed gres (``nvidia_a100_3g.40gb`` -> ``3g.40gb``)."""
    match = _MIG_TYPE.search(gres_type)
    return match.group("profile").lower() if match else None


def _mig_weight(gres_type: str, weights: Mapping[str, float] | None) -> float:
    """A slice's share of a GPU: the weight table (by full type, then profile), else slices/7."""
    profile = mig_profile(gres_type)
    assert profile is not None
    for key in (gres_type, profile):
        if weights and key in weights:
            return float(weights[key])
    return int(profile[0]) / MIG_SLICES


def _gpu_entries(tres: str) -> tuple[int | None, dict[str, int]]:
    """The untyped ``gres/gpu=N`` count (None if absent) and typed counts by type."""
    untyped: int | None = None
    typed: dict[str, int] = {}
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        if not value.isdigit():
            raise SlurmParseError(f"bad GPU count in {item.strip()!r}")
        if key == "gres/gpu":
            untyped = int(value)
        else:
            gres_type = key.split(":", 1)[1]
            typed[gres_type] = typed.get(gres_type, 0) + int(value)
    return untyped, typed


def _type_label(types: list[str]) -> str | None:
    return ",".join(sorted(set(types))) or None


def parse_gpu_tres(tres: str | None, mig_weights: Mapping[str, float] | None = None) -> GpuAlloc:
    """GPUs held according to a TRES string (``...,gres/gpu:h100=2,gres/gpu=2,...``).

    The untyped count wins over typed ones (which repeat it); typed counts are used only
    when no untyped entry exists; the two are never summed. MIG typed entries win over the
    untyped count and count as fractions (``_mig_weight``); full-GPU typed entries next to
    MIG ones count whole.
    """
    untyped, typed = _gpu_entries(tres or "")
    mig = {t: n for t, n in typed.items() if mig_profile(t)}
    full = {t: n for t, n in typed.items() if t not in mig}
    if mig:
        gpus = sum(n * _mig_weight(t, mig_weights) for t, n in mig.items()) + sum(full.values())
        slots = sum(mig.values()) + sum(full.values())
        label = _type_label([mig_profile(t) or t for t in mig] + list(full))
        return GpuAlloc(float(gpus), slots, label, True)
    count = untyped if untyped is not None else sum(full.values())
    return GpuAlloc(float(count), count, _type_label(list(full)), False)


# --- timelimit and hosts ------------------------------------------------------------

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
