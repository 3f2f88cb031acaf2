"""Ground truth of a simulation: the allocations handed to the sample generator, the
per-run sample statistics accumulated day by day, and ``truth.parquet`` (docs/design.md)."""

from __future__ import annotations

import numpy as np
import polars as pl

from contracts.jobs import ORG, OWNER, QUEUE, TIMES
from simulate.cluster import mig_fraction
from simulate.jobs import Org
from simulate.scheduler import Run

ALLOCATION_SCHEMA: dict[str, pl.DataType] = {
    "job_id_raw": pl.String(),
    "run_index": pl.Int32(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "gpu_i_id": pl.Int16(),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "kind": pl.String(),
    "seed": pl.Int64(),
}

TRUTH_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "run_index": pl.Int32(),
    **OWNER,
    **ORG,
    **QUEUE,
    "state": pl.String(),
    **TIMES,
    "gpus": pl.Float64(),
    "gpu_slots": pl.Int32(),
    "hosts": pl.List(pl.String()),
    "gpu_instances": pl.List(pl.String()),
    "gpu_model": pl.String(),
    "mig_profile": pl.String(),
    "kind": pl.String(),
    "true_mean_sm_active": pl.Float64(),
    "gpu_seconds": pl.Float64(),
    "n_samples": pl.Int64(),
}

_STATS_SCHEMA: dict[str, pl.DataType] = {
    "job_id_raw": pl.String(),
    "run_index": pl.Int32(),
    "n_samples": pl.Int64(),
    "sm_sum": pl.Float64(),
    "sm_count": pl.Int64(),
}


def run_seed(seed: int, job_id_raw: str, run_index: int) -> int:
    """A per-run seed (non-negative Int64) derived from the simulation seed."""
    state = np.random.SeedSequence([seed, int(job_id_raw), run_index]).generate_state(2, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


def allocations_frame(runs: list[Run], seed: int) -> pl.DataFrame:
    """One row per (started run, GPU or MIG instance); end clipped to the window end."""
    rows = [
        (
            run.job_id_raw,
            run.run_index,
            host,
            gpu,
            gi_id,
            run.start,
            run.alloc_end,
            run.job.kind,
            run_seed(seed, run.job_id_raw, run.run_index),
        )
        for run in runs
        if run.start is not None
        for host, gpu, gi_id in run.instances
    ]
    return pl.DataFrame(rows, schema=ALLOCATION_SCHEMA, orient="row")


SM_UNITS = 100_000  # the simulator rounds ratios to 1e-5: integer sums are exact in any order


def _sum_by_run(frame: pl.LazyFrame) -> pl.LazyFrame:
    """n_samples, sm_units, sm_count per (job_id_raw, run_index). Integer sums, so the result
    is identical from run to run whatever order polars adds in (float sums are not)."""
    return frame.group_by("job_id_raw", "run_index").agg(
        pl.col("n_samples").sum(), pl.col("sm_units").sum(), pl.col("sm_count").sum()
    )


class TruthAccumulator:
    """Sums each run's samples (``hpc_job == job_id_raw`` and ``start <= ts < end``) day by day."""

    def __init__(self, allocations: pl.DataFrame) -> None:
        self._windows = allocations.select("job_id_raw", "run_index", "start_time", "end_time").unique()
        self._parts: list[pl.DataFrame] = []

    def add_day(self, samples: pl.DataFrame) -> None:
        """Add one day of samples (RAW_SAMPLE_SCHEMA)."""
        matched = (
            samples.lazy()
            .filter(pl.col("hpc_job").is_not_null())
            .join(self._windows.lazy(), left_on="hpc_job", right_on="job_id_raw")
            .filter((pl.col("ts") >= pl.col("start_time")) & (pl.col("ts") < pl.col("end_time")))
            .select(
                pl.col("hpc_job").alias("job_id_raw"),
                "run_index",
                pl.lit(1, pl.Int64).alias("n_samples"),
                (pl.col("sm_active").fill_null(0.0) * SM_UNITS).round().cast(pl.Int64).alias("sm_units"),
                pl.col("sm_active").is_not_null().cast(pl.Int64).alias("sm_count"),
            )
        )
        self._parts.append(_sum_by_run(matched).collect())

    def totals(self) -> pl.DataFrame:
        """job_id_raw, run_index, n_samples, sm_sum, sm_count summed over the days added."""
        if not self._parts:
            return pl.DataFrame(schema=_STATS_SCHEMA)
        summed = _sum_by_run(pl.concat(self._parts).lazy()).collect()
        return (
            summed.with_columns((pl.col("sm_units") / SM_UNITS).alias("sm_sum"))
            .select(list(_STATS_SCHEMA))
            .cast(_STATS_SCHEMA)  # type: ignore[arg-type]
            .sort("job_id_raw", "run_index")
        )


def _instance(host: str, gpu: int, gi_id: int | None) -> str:
    return f"{host}:{gpu}" if gi_id is None else f"{host}:{gpu}:{gi_id}"


def _truth_row(run: Run, org: Org, models: dict[str, str], cluster: str) -> dict[str, object]:
    job = run.job
    account = org.account(job.account)
    department = account.department if account.mapped else None
    division = next((d for k, _, d in org.departments if k == department), None)
    profile = job.request.mig_profile
    fraction = mig_fraction(profile) if profile else 1.0
    if run.instances:
        gpu_model: str | None = models[run.instances[0][0]]
    else:
        gpu_model = job.request.models[0] if job.typed or profile else None
    seconds = (run.alloc_end - run.start).total_seconds() if run.start and run.alloc_end else 0.0
    return {
        "cluster": cluster,
        "job_id": run.job_id,
        "job_id_raw": run.job_id_raw,
        "run_index": run.run_index,
        "job_name": job.name,
        "user_name": job.user.name,
        "account": job.account,
        "department": department,
        "division": division,
        "partition_name": job.partition,
        "qos": job.qos,
        "state": run.state,
        "submit_time": run.submit,
        "eligible_time": run.eligible,
        "start_time": run.start,
        "end_time": run.end,
        "gpus": job.slots * fraction,
        "gpu_slots": len(run.instances),
        "hosts": run.hosts,
        "gpu_instances": [_instance(*i) for i in run.instances],
        "gpu_model": gpu_model,
        "mig_profile": profile,
        "kind": job.kind,
        "gpu_seconds": seconds * len(run.instances) * fraction,
    }


def truth_frame(runs: list[Run], org: Org, inventory: pl.DataFrame, cluster: str, stats: pl.DataFrame) -> pl.DataFrame:
    """``truth.parquet``: one row per job run, with sample statistics from ``stats``
    (``TruthAccumulator.totals()``)."""
    models = dict(inventory.select("hostname", "gpu_model").unique().iter_rows())
    rows = [_truth_row(run, org, models, cluster) for run in runs]
    sampled = ("true_mean_sm_active", "n_samples")
    base = pl.DataFrame(rows, schema={k: v for k, v in TRUTH_SCHEMA.items() if k not in sampled})
    joined = base.join(stats, on=["job_id_raw", "run_index"], how="left", validate="1:1", maintain_order="left")
    return (
        joined.with_columns(
            pl.when(pl.col("sm_count") > 0).then(pl.col("sm_sum") / pl.col("sm_count")).alias("true_mean_sm_active"),
            pl.col("n_samples").fill_null(0),
        )
        .select(list(TRUTH_SCHEMA))
        .cast(TRUTH_SCHEMA)
    )  # type: ignore[arg-type]
