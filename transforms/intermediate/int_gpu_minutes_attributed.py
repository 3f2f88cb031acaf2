"""int_gpu_minutes_attributed: DCGM minutes tied to the Slurm job runs that held the GPUs.

DuckDB SQL (text + ``?`` parameters) over ``staging.stg_dcgm__gpu_minutely`` (days of the
period) and ``staging.stg_slurm__jobs`` (the month's runs); output rolled up per GPU (or
MIG instance) x hour x run x method (SCHEMA), the input of ``fct_job_usage`` (per run)
and ``fct_gpu_hourly`` (per GPU-hour). Stored once per month as
``intermediate.int_gpu_minutes_attributed`` (pipelines/assets/intermediate.py).

Rules, per minute row of a GPU instance (a run "covers" a minute when it overlaps it):

- ``hpc_job_label``: the row's ``hpc_job`` equals a run's ``job_id_raw`` and the run
  covers the minute. A labelled row matching no run is ``unattributed`` (job_id_raw
  null): samples on a GPU a job claimed outside any of its runs, counted, not lost.
- Unlabelled rows on a host that has labelled rows in the same hour are ``unallocated``
  (the exporter maps jobs there, so an unlabelled GPU is one no job holds).
- Other unlabelled rows are tied by (host, minute) to the runs covering it: one run ->
  ``host_exclusive``; several -> ``host_shared``. Each run receives the weight
  host_gpus / max(GPUs held on the host, the host's GPUs), where host_gpus = run GPUs /
  its host count (sacct gives hosts and a count, not GPU indices); the remainder of the
  row's weight (all of it when no run covers the minute) is ``unallocated``. Weights of a
  row sum to 1, so ``samples`` summed per GPU-hour is the sample count.

Kubernetes pods (``transforms/intermediate/attribution_pods.py``; ``staging.stg_kube__pods`` of the month):
a row with no ``hpc_job`` but a ``pod`` label is tied to the pod of that namespace and name
covering the minute, charged to its job (``pod_label``; no pod -> ``unattributed``); several
pods' rows on one GPU-minute holding more samples than the minute has (a time-sliced or MPS
GPU: the exporter repeats each sample per pod) share them (``pod_shared``), and the samples
split off each row are ``split_off_samples``. Hosts with pod rows in the hour count as
labelled hosts.

Sums are weighted: ``samples`` = weight x n_samples, ``<signal>_sum`` = weight x mean x
n_samples, ``<signal>_n`` = the weighted samples where the signal is present (the minute
rollup keeps means of non-null values: exact when a field is present on all or none of a
minute's samples). ``zero_samples``: weighted samples of minutes whose best-signal mean is
at most the zero threshold. ``energy_j``: weight x mean power x n_samples x step (the
minute rollup carries power, not the energy counter); a MIG GPU's power, reported on its
device row, is first split over the instance rows of the minute by profile share
(``transforms/helpers/mig_power.py``).

Two runs of one job covering a minute (a requeue ends and restarts within it) split its
labelled samples by their overlap with the minute.

Whole hours (``transforms/intermediate/attribution_hours.py``): a GPU instance's rows of one
label in an hour that all go to one place with weight 1 (most hours of most jobs, idle hosts)
are taken from the day's hour sums (``staging.stg_dcgm__gpu_hour_sums``) instead of their
minute rows; the sums are the same fixed-point integers, so the rows are identical to
attributing every minute (``whole_hours=False``, which the tests compare with).

Measured on the demo month (128 GPUs x 31 days at 30 s: 7.87 M minute rows, 5.48 M
labelled; 2 cores, warm, median of 3): this SQL (runs bucketed by hour, equi-join on
(hpc_job | host, hour) + range filter, all rules, fixed-point sums, ordered output) 2.7 s.
Polars: moving the minute rows out of DuckDB alone takes 2.2 s, then the label join and the
rollups of labelled and unlabelled rows, without the host rules, 0.9 s: 3.1 s for less work
(under load from other jobs: SQL 3.4 s, Polars 7.5 s). The SQL is kept; the minute rows
never leave DuckDB.
The MIG power split (``transforms/helpers/mig_power.py``) cost 2.15 -> 3.0 s on the demo
month in day windows (best of 3), mostly the aggregation over the 2.86 M instance rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import polars as pl

from contracts.gpus import GPU_INSTANCE
from transforms.helpers.mig_power import mig_key, mig_power_ctes, mig_values
from transforms.helpers.minute_measures import MEAN_SIGNALS
from transforms.helpers.sql_params import bind
from transforms.intermediate.attribution_hours import ROUTE_CTES, STORED_SUMS, SUMMED_SUMS, partial_minutes
from transforms.intermediate.attribution_pods import POD_LABEL_CTES, POD_RUN_CTES
from transforms.intermediate.attribution_sql import (
    LABEL_CTES,
    RUN_CTES,
    minute_sums,
    output_measures,
)

__all__ = [
    "ATTRIBUTED_METHODS",
    "MEAN_SIGNALS",
    "METHODS",
    "ORDER",
    "POD_METHODS",
    "SCHEMA",
    "int_gpu_minutes_attributed_sql",
]

METHODS = ("hpc_job_label", "pod_label", "pod_shared", "host_exclusive", "host_shared", "unattributed", "unallocated")
ATTRIBUTED_METHODS = ("hpc_job_label", "pod_label", "pod_shared", "host_exclusive", "host_shared")
POD_METHODS = ("pod_label", "pod_shared")

SCHEMA: dict[str, pl.DataType] = {
    **GPU_INSTANCE,
    "hour": pl.Datetime("us"),
    "job_id_raw": pl.String(),
    "start_time": pl.Datetime("us"),
    "attribution_method": pl.String(),
    "samples": pl.Float64(),
    **{f"{signal}_{stat}": pl.Float64() for signal in MEAN_SIGNALS for stat in ("sum", "n")},
    "zero_samples": pl.Float64(),
    "fb_used_mib_max": pl.Float64(),
    "fb_used_mib_sum": pl.Float64(),
    "fb_used_mib_n": pl.Float64(),
    "energy_j": pl.Float64(),
    "split_off_samples": pl.Float64(),
}

# The minute-rollup columns the rules read (the CTE is materialized: fewer columns, less work).
MINUTE_COLUMNS = [
    "hostname",
    "gpu",
    "gpu_i_id",
    "gpu_i_profile",
    "hpc_job",
    "pod",
    "namespace",
    "minute",
    "n_samples",
    "gpu_util_mean",
    "gr_engine_active_mean",
    "sm_active_mean",
    "tensor_active_mean",
    "best_signal_mean",
    "fb_used_mib_mean",
    "fb_used_mib_max",
    "power_w_mean",
]
# Output order (a fixed order keeps downstream float sums identical across reruns).
ORDER = (
    "cluster",
    "hostname",
    "gpu",
    "gpu_i_id",
    "gpu_i_profile",
    "hour",
    "job_id_raw",
    "start_time",
    "attribution_method",
)
KEY = ", ".join(ORDER[1:])
MEASURES = [column for column in SCHEMA if column not in ORDER]

HOST_CTES = """unlabelled AS (
    SELECT m.* FROM minutes m ANTI JOIN labelled_host_hours l ON l.hostname = m.hostname AND l.hour = m.hour
    WHERE m.hpc_job IS NULL AND m.pod IS NULL
),
host_minutes AS (
    SELECT DISTINCT hostname, minute, hour FROM unlabelled
),
host_shares AS (
    SELECT h.hostname, h.minute, r.job_id_raw, r.start_time, r.host_gpus,
           count(*) OVER hm AS n_runs, sum(r.host_gpus) OVER hm AS held
    FROM host_minutes h JOIN host_run_hours r
      ON r.hostname = h.hostname AND r.hour = h.hour
     AND h.minute < r.run_end AND h.minute + INTERVAL 1 MINUTE > r.run_start
    WINDOW hm AS (PARTITION BY h.hostname, h.minute ORDER BY r.job_id_raw, r.start_time
                  ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
),
host_weights AS (
    SELECT s.hostname, s.minute, s.job_id_raw, s.start_time,
           CASE WHEN s.n_runs = 1 THEN 'host_exclusive' ELSE 'host_shared' END AS attribution_method,
           s.host_gpus / greatest(s.held, coalesce(c.host_capacity, s.held)) AS w
    FROM host_shares s LEFT JOIN capacity c ON c.hostname = s.hostname
),
host_attributed AS (
    SELECT u.*, h.job_id_raw, h.start_time, h.attribution_method, h.w
    FROM unlabelled u JOIN host_weights h ON h.hostname = u.hostname AND h.minute = u.minute
),
host_remainder AS (
    SELECT u.*, NULL AS job_id_raw, CAST(NULL AS TIMESTAMP) AS start_time,
           'unallocated' AS attribution_method, 1.0 - coalesce(t.w, 0.0) AS w
    FROM unlabelled u LEFT JOIN (
        SELECT hostname, minute, sum(w ORDER BY job_id_raw, start_time) AS w FROM host_weights GROUP BY ALL
    ) t ON t.hostname = u.hostname AND t.minute = u.minute
    WHERE 1.0 - coalesce(t.w, 0.0) > 1e-12
),
idle_on_labelled_hosts AS (
    SELECT m.*, NULL AS job_id_raw, CAST(NULL AS TIMESTAMP) AS start_time,
           'unallocated' AS attribution_method, 1.0 AS w
    FROM minutes m SEMI JOIN labelled_host_hours l ON l.hostname = m.hostname AND l.hour = m.hour
    WHERE m.hpc_job IS NULL AND m.pod IS NULL
),
weighted AS (
    SELECT * FROM labelled
    UNION ALL BY NAME SELECT * FROM pod_labelled
    UNION ALL BY NAME SELECT * FROM host_attributed
    UNION ALL BY NAME SELECT * FROM host_remainder
    UNION ALL BY NAME SELECT * FROM idle_on_labelled_hosts
),
"""


def _text(sums_stored: bool) -> str:
    return f"""
WITH params AS (
    SELECT CAST($step_seconds AS DOUBLE) AS step_seconds, CAST($zero_threshold AS DOUBLE) AS zero_threshold,
           CAST($mig_key AS VARCHAR) AS mig_weights
),
capacity AS (
    SELECT unnest(CAST($host_names AS VARCHAR[])) AS hostname, unnest(CAST($host_gpus AS DOUBLE[])) AS host_capacity
),
{RUN_CTES}{POD_RUN_CTES}{STORED_SUMS if sums_stored else SUMMED_SUMS}{ROUTE_CTES}\
{partial_minutes(MINUTE_COLUMNS)}{mig_power_ctes("minutes_read", "minutes")},
{LABEL_CTES}{POD_LABEL_CTES}{HOST_CTES}minute_sums AS (
    SELECT {KEY},
    {minute_sums()}
    FROM weighted, params
    GROUP BY {KEY}
)
SELECT CAST($cluster AS VARCHAR) AS cluster, {KEY},
    {output_measures(MEASURES)}
FROM (
    SELECT * FROM minute_sums
    UNION ALL BY NAME SELECT * EXCLUDE (gid) FROM whole_sums ANTI JOIN single_groups USING (gid)
)
GROUP BY {KEY}
UNION ALL
SELECT CAST($cluster AS VARCHAR) AS cluster, {KEY},
    {output_measures(MEASURES, aggregate=False)}
FROM whole_sums SEMI JOIN single_groups USING (gid)
ORDER BY {", ".join(f"{column} NULLS FIRST" for column in ORDER[1:])}
"""


def int_gpu_minutes_attributed_sql(
    cluster: str,
    month_start: datetime,
    period_start: datetime,
    period_end: datetime,
    step_seconds: int,
    host_names: Sequence[str],
    host_gpus: Sequence[float],
    zero_threshold: float = 0.01,
    mig_weights: Mapping[str, float] | None = None,
    sums_stored: bool = True,
    whole_hours: bool = True,
) -> tuple[str, list[object]]:
    """(SQL text, params) for one cluster and period: rows in SCHEMA, ordered by ORDER.

    ``month_start``: the ``month`` partition of ``staging.stg_slurm__jobs`` to read;
    ``host_names``/``host_gpus``: every host of the cluster and its GPUs (MIG instances as
    fractions), from the inventory; ``zero_threshold``: config ``flags.zero_util_threshold``;
    ``mig_weights``: a MIG profile's share of its GPU (``rates.mig_weight``; profiles not in it:
    compute slices / 7), which splits the GPU's power over its instances (``helpers.mig_power``);
    ``sums_stored``: read the period's hour sums from ``staging.stg_dcgm__gpu_hour_sums`` (the
    daily job wrote them for every day of the period), else sum its minute rows here;
    ``whole_hours`` false: attribute every minute row (the reference for the whole-hour rules).
    """
    weights = dict(mig_weights or {})
    if len(host_names) != len(host_gpus):
        raise ValueError("host_names and host_gpus must have the same length")
    if step_seconds <= 0:
        raise ValueError(f"step_seconds must be positive, got {step_seconds}")
    values = {
        "cluster": cluster,
        "month": month_start.date(),
        "period_start": period_start,
        "period_end": period_end,
        "first_day": period_start.date(),
        "last_day": (period_end - timedelta(microseconds=1)).date(),
        "step_seconds": step_seconds,
        "zero_threshold": zero_threshold,
        "host_names": list(host_names),
        "host_gpus": [float(g) for g in host_gpus],
        "mig_key": mig_key(weights),
        **mig_values(weights),
        "whole_hours": whole_hours,
    }
    return bind(_text(sums_stored), values)
