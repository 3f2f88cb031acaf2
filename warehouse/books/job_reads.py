"""One job's rows, read from the marts for ``cardhours job`` (reports/job_report.py assembles them).

A job is found by the id a person types: the id as users see it (`job_id`: `123`, `123_4`,
`123+1`, a Kubernetes key `namespace/PodGroup/name`), Slurm's `JobIDRaw`, an array's master id
(all its tasks), a heterogeneous job's id (all its components), or, for Kubernetes, the pod or
owner name alone (`vc-nb8bh`) or with its namespace (`ml-research/vc-nb8bh`), or the name of
the Kueue Workload that admitted it (`pytorchjob-pt-g4dlv-1a2b3`: kind, name, a 5-character hash). Every read takes
bound parameters; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import duckdb
import polars as pl

from warehouse.connection import read_frame

MATCH = """(
    job_id = $id OR job_id_raw = $id OR array_job_id = $id OR het_job_id = $id
    OR (scheduler = 'kubernetes' AND (job_name = $id OR account || '/' || job_name = $id
        OR $id LIKE lower(split_part(job_id, '/', 2)) || '-' || job_name || '-_____'))
)"""  # the last line: Kueue's Workload name for the job (`pytorchjob-pt-g4dlv-1a2b3`)
SCOPE = "($cluster IS NULL OR cluster = $cluster) AND ($month IS NULL OR month = $month)"
RUN_KEY = ("cluster", "job_id_raw", "start_time", "month")


@dataclass(frozen=True)
class JobSearch:
    """What was searched: the id, and the clusters and months of the marts in scope."""

    job_id: str
    clusters: list[str]
    months: list[date]


def find_runs(conn: duckdb.DuckDBPyConnection, job_id: str, cluster: str | None, month: date | None) -> pl.DataFrame:
    """The job's runs in ``marts.fct_job_usage`` (one row per run and month), oldest first."""
    sql = f"SELECT * FROM marts.fct_job_usage WHERE {MATCH} AND {SCOPE} ORDER BY cluster, start_time NULLS LAST, job_id"
    return read_frame(conn, sql, _params(job_id, cluster, month))


def searched(conn: duckdb.DuckDBPyConnection, job_id: str, cluster: str | None, month: date | None) -> JobSearch:
    """The clusters and months a search for ``job_id`` looked in (for the not-found message)."""
    sql = f"SELECT DISTINCT cluster, month FROM marts.fct_job_usage WHERE {SCOPE} ORDER BY month, cluster"
    rows = conn.execute(sql, {"cluster": cluster, "month": month}).fetchall()
    return JobSearch(job_id, sorted({r[0] for r in rows}), sorted({r[1] for r in rows}))


def read_job_frames(conn: duckdb.DuckDBPyConnection, runs: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The runs' flags, chargeback lines and per-GPU attribution sums, keyed by the runs'
    (cluster, job_id_raw, start_time, month)."""
    conn.register("job_runs", runs.select(RUN_KEY).unique())
    try:
        return {name: read_frame(conn, sql) for name, sql in READS.items()}
    finally:
        conn.unregister("job_runs")


def _params(job_id: str, cluster: str | None, month: date | None) -> dict[str, object]:
    return {"id": job_id, "cluster": cluster, "month": month}


_ON = "t.cluster = r.cluster AND t.job_id_raw = r.job_id_raw AND t.start_time IS NOT DISTINCT FROM r.start_time"
READS = {
    "flags": f"""
        SELECT t.cluster, t.job_id, t.job_id_raw, t.start_time, t.month, t.reason, t.severity, t.detail,
               t.recommendation, t.wasted_gpu_hours, t.idle_cost, t.currency
        FROM marts.fct_job_flags t JOIN job_runs r ON {_ON} AND t.month = r.month
        ORDER BY t.start_time, t.wasted_gpu_hours DESC""",
    "charges": f"""
        SELECT t.cluster, t.job_id_raw, t.start_time, t.charge_month AS month, t.billing_month, t.charge_class,
               t.gpu_model, t.charge_seconds, CAST(t.gpu_hours AS DOUBLE) AS gpu_hours,
               CAST(t.unit_price AS DOUBLE) AS unit_price, CAST(t.price_multiplier AS DOUBLE) AS price_multiplier,
               CAST(t.cost AS DOUBLE) AS cost, t.currency
        FROM marts.fct_chargeback_jobs t JOIN job_runs r ON {_ON} AND t.charge_month = r.month
        ORDER BY t.start_time, t.charge_period_start""",
    "gpus": f"""
        SELECT t.cluster, t.job_id_raw, t.start_time, t.month, t.hostname, t.gpu, t.gpu_i_id, t.gpu_i_profile,
               sum(t.samples) AS samples, sum(t.best_sum) AS best_sum, sum(t.best_n) AS best_n,
               sum(t.sm_active_n) AS sm_active_n, sum(t.gr_engine_active_n) AS gr_engine_active_n,
               max(t.fb_used_mib_max) AS fb_used_mib_max, sum(t.fb_used_mib_sum) AS fb_used_mib_sum,
               sum(t.fb_used_mib_n) AS fb_used_mib_n, sum(t.energy_j) AS energy_j
        FROM intermediate.int_gpu_minutes_attributed t JOIN job_runs r ON {_ON} AND t.month = r.month
        GROUP BY ALL ORDER BY t.start_time, t.hostname, t.gpu, t.gpu_i_id""",
}
