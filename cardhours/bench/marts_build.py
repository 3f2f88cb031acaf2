"""The timed parts of ``cardhours bench marts``, each run in a fresh spawned process.

- ``build_month``: Dagster ``materialize`` of the month's assets after the landed days
  (``BUILT``, in dependency order; the in-process executor runs one step at a time), with
  the same asset code, resources and checks as ``cardhours run``. The clock starts after
  imports and the ephemeral instance; peak RSS is the process's ``VmHWM`` (it starts afresh
  at exec, so it is this build's own, DuckDB's memory included).
- ``time_paths``: the attribution SQL of one cluster and month taking whole hours from the
  hour sums and attributing every minute row (``PATHS``), alternately ``rounds`` times,
  fetched as Arrow like the asset does; the fastest of each counts, and the rows must be
  identical.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime

# The month's assets, upstream first (reports are not part of the bench).
BUILT = (
    ("staging", "stg_slurm__jobs"),
    ("intermediate", "int_gpu_minutes_attributed"),
    ("intermediate", "int_gpu_inventory_observed"),
    ("marts", "fct_job_usage"),
    ("marts", "fct_gpu_hourly"),
    ("marts", "mart_department_monthly"),
    ("marts", "mart_cluster_monthly"),
)
# The attribution's two ways (``whole_hours`` of int_gpu_minutes_attributed_sql).
PATHS = {"whole hours from hour sums": True, "every minute row": False}
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def rss_gb() -> float:
    """Peak resident memory of this process so far, GB (``VmHWM``)."""
    status = open("/proc/self/status").read()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1)) / 2**20


def build_month(config_path: str, partition_key: str) -> dict:
    """Materialize ``BUILT`` for one monthly partition; wall seconds, per-step seconds, peak RSS."""
    from dagster import AssetKey, DagsterEventType, DagsterInstance, materialize

    from pipelines.definitions import ASSETS
    from pipelines.resources import CardhoursResource

    resources = {"cardhours": CardhoursResource(config_path=config_path)}
    selection = [AssetKey(list(key)) for key in BUILT]
    with DagsterInstance.ephemeral() as instance:
        base = rss_gb()
        started = time.perf_counter()
        result = materialize(
            ASSETS,
            selection=selection,
            partition_key=partition_key,
            instance=instance,
            resources=resources,
            run_config=QUIET_RUN_CONFIG,
            raise_on_error=False,
        )
        seconds = time.perf_counter() - started
    failures = [
        f"{e.step_key}: {e.step_failure_data.error.message.strip()}"
        for e in result.all_events
        if e.is_step_failure and e.step_failure_data and e.step_failure_data.error
    ]
    steps = {
        e.step_key: e.event_specific_data.duration_ms / 1000
        for e in result.all_events
        if e.event_type == DagsterEventType.STEP_SUCCESS
    }
    return {
        "success": result.success,
        "failures": failures,
        "seconds": seconds,
        "steps": steps,
        "peak_rss_gb": rss_gb(),
        "base_rss_gb": base,
    }


def time_paths(config_path: str, month_start: datetime, month_end: datetime, rounds: int) -> dict:
    """Seconds of the attribution SQL of one cluster and month (the asset's windows, fastest
    of ``rounds``) taking whole hours from the hour sums and attributing every minute row, and
    whether both give the same rows."""
    import pyarrow as pa

    from pipelines.assets.intermediate import attribution_queries
    from pipelines.resources import CardhoursResource
    from pipelines.store import open_warehouse

    cardhours = CardhoursResource(config_path=config_path)
    cluster = cardhours.config.clusters[0]
    queries = {
        path: attribution_queries(cardhours, cluster, month_start, month_end, whole_hours=whole)
        for path, whole in PATHS.items()
    }
    best: dict[str, float] = {}
    tables = {}
    with open_warehouse(cardhours.config) as conn:
        for _ in range(rounds):
            for path, chunks in queries.items():
                started = time.perf_counter()
                tables[path] = pa.concat_tables(
                    [conn.sql(text, params=params).to_arrow_table() for text, params in chunks]
                )
                best[path] = min(best.get(path, float("inf")), time.perf_counter() - started)
    first = tables[next(iter(PATHS))]
    return {
        "seconds": best,
        "rows": first.num_rows,
        "identical": all(table.equals(first) for table in tables.values()),
    }


def in_child(function, *args):
    """``function(*args)`` in a fresh spawned interpreter; its result."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()
