"""Evidence for the Slurm record policy (transforms.helpers.slurm_policy) that needs the warehouse or Dagster:
the last labelled DCGM sample of each runaway run, and the warning check for unknown states."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey

from config import Config
from transforms.helpers.slurm_policy import KNOWN_STATES
from transforms.helpers.slurm_runs import LAST_SAMPLES_SCHEMA
from warehouse import read_frame

EXAMPLES_SHOWN = 5

_LAST_SAMPLES_SQL = """
SELECT r.cluster, r.job_id_raw, r.start_time, max(s.ts) AS last_ts
FROM _runaway_runs r
JOIN raw.dcgm_samples s
  ON s.cluster = r.cluster AND s.hpc_job = r.job_id_raw AND s.day >= CAST(r.start_time AS DATE)
 AND s.ts >= r.start_time
GROUP BY ALL
"""


def last_labelled_samples(conn: duckdb.DuckDBPyConnection, runs: pl.DataFrame, config: Config) -> pl.DataFrame:
    """LAST_SAMPLES_SCHEMA: per run, the end of its last DCGM sample labelled ``hpc_job`` = its id
    (the sample's time + the cluster's sample step), for runs that have such a sample."""
    keys = runs.select("cluster", "job_id_raw", "start_time").unique()
    conn.register("_runaway_runs", keys.to_arrow())
    try:
        found = read_frame(conn, _LAST_SAMPLES_SQL)
    finally:
        conn.unregister("_runaway_runs")
    steps = pl.DataFrame(
        {"cluster": [c.name for c in config.clusters], "_step": [c.sample_step_seconds for c in config.clusters]},
        schema={"cluster": pl.String(), "_step": pl.Int64()},
    )
    return (
        found.join(steps, on="cluster", how="left")
        .with_columns(last_sample_end=pl.col("last_ts") + pl.duration(seconds=pl.col("_step").fill_null(0)))
        .select(list(LAST_SAMPLES_SCHEMA))
        .cast(LAST_SAMPLES_SCHEMA)
    )


def unknown_states_check(jobs: pl.DataFrame, asset_key: AssetKey | Sequence[str], check_name: str) -> AssetCheckResult:
    """A warning (never blocking) naming each state cardhours does not know, its runs and examples."""
    unknown = jobs.filter(~pl.col("state").is_in(KNOWN_STATES))
    by_state = unknown.group_by("state").agg(pl.len().alias("runs"), pl.col("job_id").head(EXAMPLES_SHOWN))
    by_state = by_state.sort("runs", "state", descending=[True, False])
    parts = [f"{state} ({runs} runs, e.g. job {', '.join(ids)})" for state, runs, ids in by_state.iter_rows()]
    description = (
        f"{unknown.height} staged runs have a state cardhours does not know, billed as their times say: "
        + "; ".join(parts)
        if parts
        else None
    )
    return AssetCheckResult(
        passed=unknown.is_empty(),
        asset_key=asset_key if isinstance(asset_key, AssetKey) else AssetKey(list(asset_key)),
        check_name=check_name,
        severity=AssetCheckSeverity.WARN,
        description=description,
        metadata={"unknown_states": {state: runs for state, runs, _ in by_state.iter_rows()}},
    )
