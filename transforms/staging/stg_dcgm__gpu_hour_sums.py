"""staging.stg_dcgm__gpu_hour_sums: a day's DCGM minute rows summed per GPU (or MIG instance),
label and hour, in fixed point.

The month's attribution (``intermediate.int_gpu_minutes_attributed``) ties each minute row to
runs with a weight. In most hours every row of a GPU and label goes to one place with weight 1:
a job label whose one run covers the hour, a label no run touches, an unlabelled GPU on a host
whose other GPUs carry labels, a host no run touches or one run holds whole. For those hours
the month needs only these sums, so it reads minute rows for the other hours alone. The sums
are the integers (1e-12 units) the attribution adds per minute row
(``transforms.helpers.minute_measures``), so both ways give the same bits.

A MIG GPU's power is split over its instances' rows minute by minute first
(``transforms.helpers.mig_power``), as the attribution does. ``step_seconds``,
``zero_threshold`` and ``mig_weights`` (energy and ``zero_samples`` depend on them) are kept
with the sums: a month built with other values reads the minute rows instead. Written by the
daily job after the minute rollup; a day without sums (landed by an older cardhours) is summed
from its minute rows when the month is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import polars as pl

from transforms.helpers.host_ranges import EVERY_HOST, HostRange
from transforms.helpers.mig_power import mig_key, mig_power_ctes, mig_values
from transforms.helpers.minute_measures import FIXED_TYPE, TERMS, fixed
from transforms.helpers.sql_params import bind

KEY = ("cluster", "hostname", "gpu", "gpu_i_id", "gpu_i_profile", "hpc_job", "pod", "namespace", "hour")
FIXED = pl.Decimal(38, 0)
SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "hpc_job": pl.String(),
    "pod": pl.String(),
    "namespace": pl.String(),
    "hour": pl.Datetime("us"),
    "step_seconds": pl.Float64(),
    "zero_threshold": pl.Float64(),
    "mig_weights": pl.String(),
    "minute_rows": pl.Int64(),
    "first_minute": pl.Datetime("us"),
    "last_minute": pl.Datetime("us"),
    "fb_used_mib_max": pl.Float64(),
    **{f"{name}_e12": FIXED for name in TERMS},
}


def hour_sums_select(minutes: str) -> str:
    """The SELECT of hour sums (SCHEMA's columns, unordered) over the relation ``minutes``: minute
    rows (MIG power split) with a weight ``w`` of 1, beside a relation ``params``
    (``step_seconds``, ``zero_threshold``, ``mig_weights``)."""
    sums = ",\n    ".join(f"CAST(sum({fixed(term)}) AS {FIXED_TYPE}) AS {name}_e12" for name, term in TERMS.items())
    return f"""SELECT {", ".join(KEY)}, any_value(params.step_seconds) AS step_seconds,
    any_value(params.zero_threshold) AS zero_threshold, any_value(params.mig_weights) AS mig_weights,
    count(*) AS minute_rows, min(minute) AS first_minute, max(minute) AS last_minute,
    max(fb_used_mib_max) AS fb_used_mib_max,
    {sums}
FROM {minutes}, params
GROUP BY {", ".join(KEY)}"""


def stg_dcgm__gpu_hour_sums_sql(
    cluster: str,
    day: date,
    step_seconds: int,
    zero_threshold: float,
    mig_weights: Mapping[str, float] | None = None,
    hosts: HostRange = EVERY_HOST,
) -> tuple[str, list[object]]:
    """(SQL text, params): the hour sums of one (cluster, day) of ``staging.stg_dcgm__gpu_minutely``,
    of ``hosts`` (a shard of the day), in SCHEMA, ordered by KEY (nulls first). ``mig_weights``:
    a MIG profile's share of its GPU, as the attribution takes it."""
    weights = dict(mig_weights or {})
    host_filter, host_values = _named_hosts(hosts)
    text = f"""
WITH params AS (
    SELECT CAST($step_seconds AS DOUBLE) AS step_seconds, CAST($zero_threshold AS DOUBLE) AS zero_threshold,
           CAST($mig_key AS VARCHAR) AS mig_weights
),
day_minutes AS (
    SELECT *, CAST(1.0 AS DOUBLE) AS w, date_trunc('hour', minute) AS hour FROM staging.stg_dcgm__gpu_minutely
    WHERE cluster = $cluster AND day = $day{host_filter}
),
{mig_power_ctes("day_minutes", "minutes")}
{hour_sums_select("minutes")}
ORDER BY {", ".join(f"{column} NULLS FIRST" for column in KEY)}
"""
    values = {
        "step_seconds": float(step_seconds),
        "zero_threshold": float(zero_threshold),
        "mig_key": mig_key(weights),
        "cluster": cluster,
        "day": day,
        **mig_values(weights),
        **host_values,
    }
    return bind(text, values)


def _named_hosts(hosts: HostRange) -> tuple[str, dict[str, object]]:
    """``hosts``' condition with named parameters (``$host_0``, ...) and their values."""
    text, values = hosts.sql(), {}
    for i, value in enumerate(hosts.params):
        text = text.replace("?", f"$host_{i}", 1)
        values[f"host_{i}"] = value
    return text, values
