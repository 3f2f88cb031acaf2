"""marts.fct_gpu_hourly: per cluster, GPU (or MIG instance) of the inventory and hour of the period.

The inventory may differ by hour (the config's, with the cards DCGM reported otherwise replaced:
transforms/intermediate/int_gpu_inventory_observed.py).

The basis for capacity, infra idle (capacity - allocated) and hour-of-day views.

- ``capacity_seconds`` = 3600 x the instance's GPU fraction.
- ``allocated_seconds``: sacct gives a run's hosts and GPU count, not GPU indices, so each
  run holds gpus / n_hosts GPUs on each host, and the host's held GPU-seconds in the hour
  are spread over its instances in proportion to their fractions. A run holding all of a
  host's GPUs allocates each of them fully; ``allocation_basis`` says ``host_whole`` when
  every run on the host in that hour held all of it, ``host_spread`` when at least one
  held only part (then allocation is a host average, not the GPU's own). Where samples carry
  ``hpc_job`` labels, each instance is allocated the seconds of the hour covered by the runs
  labelled on it (x its fraction), ``allocation_basis`` ``hpc_job_label``, when those add up
  to the GPU-seconds sacct says the host's runs held in that hour (else the spread applies:
  a run with a GPU that sent no samples cannot be placed).
  Kubernetes pods add the seconds their pod-labelled samples stand for on the instance
  (``pod_label`` + ``pod_shared`` samples x step, at most the hour, x its fraction; a
  time-sliced GPU's pods share one GPU's seconds); ``allocation_basis`` ``pod_label`` where
  no run held the host. Pod time its samples do not stand for (a GPU that sent no samples,
  an open pod after the data end; ``transforms/marts/gpu_hourly_pods.py``) is held on the pod's
  node like a Slurm run without labels (``host_spread``/``host_whole``).
  The spread goes to each instance in proportion to its capacity left free by pod-labelled
  samples (= its fraction where there are none), so a host's held seconds fill free GPUs.
- ``active_seconds`` = allocated x the best-signal mean of the samples attributed to runs
  on that instance and hour (null when none were attributed).
- ``n_samples`` (all samples of the instance), ``attributed_samples`` (tied to runs,
  weighted when shared), ``unattributed_samples`` (labelled with a job that had no run
  covering them), ``expected_samples`` = 3600 / step, ``coverage`` = n / expected, at most 1.

Hosts of runs that are not in the inventory allocate nothing here (the asset reports them).
MIG instances: DCGM's GPU_I_ID is the driver's instance id, the inventory numbers a GPU's
layout 0, 1, ...; samples join the inventory by (host, GPU, profile, rank of the id among
that GPU's instances of that profile).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.gpus import GPU_INSTANCE
from transforms.helpers.run_hours import per_hour
from transforms.intermediate.int_gpu_minutes_attributed import ATTRIBUTED_METHODS, POD_METHODS
from transforms.marts.gpu_hourly_pods import pod_host_deficit

INSTANCE = ["cluster", "hostname", "gpu", "gpu_i_id"]
RANKED = ["cluster", "hostname", "gpu", "gpu_i_profile", "_rank"]

SCHEMA: dict[str, pl.DataType] = {
    **GPU_INSTANCE,
    "gpu_model": pl.String(),
    "hour": pl.Datetime("us"),
    "capacity_seconds": pl.Float64(),
    "allocated_seconds": pl.Float64(),
    "allocation_basis": pl.String(),
    "active_seconds": pl.Float64(),
    "n_samples": pl.Int64(),
    "attributed_samples": pl.Float64(),
    "unattributed_samples": pl.Int64(),
    "expected_samples": pl.Int64(),
    "coverage": pl.Float64(),
    "month": pl.Date(),
}


def _host_allocation(jobs: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Per (cluster, hostname, hour): GPU-seconds held and the GPUs each run held there (min)."""
    started = jobs.filter(pl.col("start_time").is_not_null() & (pl.col("hosts").list.len() > 0))
    runs = started.select(
        "cluster",
        "hosts",
        host_gpus=pl.col("gpus") / pl.col("hosts").list.len(),
        run_start=pl.max_horizontal(pl.col("start_time"), pl.lit(period_start)),
        run_end=pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end)),
    ).filter(pl.col("run_end") > pl.col("run_start"))
    return (
        per_hour(runs)
        .explode("hosts")
        .rename({"hosts": "hostname"})
        .group_by("cluster", "hostname", "hour")
        .agg(
            (pl.col("_seconds") * pl.col("host_gpus")).sum().alias("_held_gpu_seconds"),
            pl.col("host_gpus").min().alias("_min_run_gpus"),
        )
    )


def _run_windows(jobs: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Per started run: its key and its [run_start, run_end) clipped to the period."""
    return jobs.filter(pl.col("start_time").is_not_null()).select(
        "cluster",
        "job_id_raw",
        "start_time",
        run_start=pl.max_horizontal(pl.col("start_time"), pl.lit(period_start)),
        run_end=pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end)),
    )


def _label_seconds(
    jobs: pl.DataFrame, ranked: pl.DataFrame, period_start: datetime, period_end: datetime
) -> pl.DataFrame:
    """Per instance (RANKED key) and hour: seconds of the hour covered by the runs whose
    ``hpc_job`` label appeared on that instance in that hour (at most 3600). ``ranked``: the
    attributed rows ``_with_instance_rank``."""
    placed = (
        ranked.filter(pl.col("attribution_method") == "hpc_job_label")
        .select(*RANKED, "hour", "job_id_raw", "start_time")
        .unique()
    )
    placed = placed.join(_run_windows(jobs, period_start, period_end), on=["cluster", "job_id_raw", "start_time"])
    overlap = pl.min_horizontal(pl.col("run_end"), pl.col("hour") + pl.duration(hours=1)) - pl.max_horizontal(
        pl.col("run_start"), pl.col("hour")
    )
    return placed.group_by(*RANKED, "hour").agg(
        pl.min_horizontal((overlap.dt.total_microseconds() / 1e6).clip(0.0).sum(), pl.lit(3600.0)).alias(
            "_label_seconds"
        )
    )


def _with_instance_rank(frame: pl.DataFrame) -> pl.DataFrame:
    """``_rank``: the instance's rank by gpu_i_id among its GPU's instances of its profile."""
    rank = pl.col("gpu_i_id").rank("dense").over("cluster", "hostname", "gpu", "gpu_i_profile")
    return frame.with_columns(_rank=rank.cast(pl.Int32))


def _sample_measures(ranked: pl.DataFrame) -> pl.DataFrame:
    """Per instance (RANKED key) and hour: sample counts and the attributed best-signal sums
    (``ranked``: the attributed rows ``_with_instance_rank``)."""
    is_attributed = pl.col("attribution_method").is_in(ATTRIBUTED_METHODS)
    return ranked.group_by(*RANKED, "hour").agg(
        pl.col("samples").sum().alias("_samples"),
        pl.col("samples").filter(is_attributed).sum().alias("attributed_samples"),
        pl.col("samples").filter(pl.col("attribution_method") == "unattributed").sum().alias("_unattributed"),
        pl.col("best_sum").filter(is_attributed).sum().alias("_best_sum"),
        pl.col("best_n").filter(is_attributed).sum().alias("_best_n"),
        pl.col("samples").filter(pl.col("attribution_method").is_in(POD_METHODS)).sum().alias("_pod_samples"),
    )


def _instance_hours(inventory: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Each instance x hour with ``_rank`` and ``_host_capacity`` (the host's GPUs that hour).
    An inventory with an ``hour`` column (warehouse/books/inventory.py) gives each hour's
    instances (ranked within the hour); else every hour has all of them."""
    columns = ["hour"] if "hour" in inventory.columns else []
    instances = inventory.select(*INSTANCE, "gpu_i_profile", "gpu_model", "gpu_fraction", *columns)
    if not columns:
        hours = pl.datetime_range(period_start, period_end, "1h", closed="left", eager=True).alias("hour")
        instances = instances.with_columns(_host_capacity=pl.col("gpu_fraction").sum().over("cluster", "hostname"))
        return _with_instance_rank(instances).join(hours.to_frame(), how="cross")
    rank = pl.col("gpu_i_id").rank("dense").over("cluster", "hostname", "gpu", "gpu_i_profile", "hour")
    return instances.with_columns(
        _host_capacity=pl.col("gpu_fraction").sum().over("cluster", "hostname", "hour"),
        _rank=rank.cast(pl.Int32),
    ).select(*INSTANCE, "gpu_i_profile", "gpu_model", "gpu_fraction", "_host_capacity", "_rank", "hour")


def fct_gpu_hourly(
    inventory: pl.DataFrame,
    jobs: pl.DataFrame,
    attributed: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    step_seconds: int,
    pods: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Rows in SCHEMA for every inventory instance x hour of [period_start, period_end).

    ``inventory``: ``Config.inventory_frame()`` rows, or those of each hour (with ``hour``);
    ``jobs``: stg_slurm__jobs runs;
    ``attributed``: int_gpu_minutes_attributed rows of the same period; ``pods``:
    stg_kube__pods rows of the cluster (their time no sample stands for is held on their node).
    """
    grid = _instance_hours(inventory, period_start, period_end)
    held = _host_allocation(jobs, period_start, period_end)
    if pods is not None:
        held = (
            pl.concat([held, pod_host_deficit(pods, attributed, period_start, period_end, step_seconds)])
            .group_by("cluster", "hostname", "hour")
            .agg(pl.col("_held_gpu_seconds").sum(), pl.col("_min_run_gpus").min())
        )
    ranked = _with_instance_rank(attributed)
    frame = (
        grid.join(held, on=["cluster", "hostname", "hour"], how="left")
        .join(_sample_measures(ranked), on=[*RANKED, "hour"], how="left", nulls_equal=True)
        .join(
            _label_seconds(jobs, ranked, period_start, period_end),
            on=[*RANKED, "hour"],
            how="left",
            nulls_equal=True,
        )
    )
    # Label placement applies to a host-hour when the labelled runs account for all it held.
    label_allocated = pl.col("_label_seconds").fill_null(0.0) * pl.col("gpu_fraction")
    held = pl.col("_held_gpu_seconds")
    frame = frame.with_columns(
        _by_label=(held > 0)
        & (
            (label_allocated.sum().over("cluster", "hostname", "hour") - held).abs()
            <= 1e-6 * pl.max_horizontal(held, pl.lit(1.0))
        )
    )
    pod_seconds = pl.min_horizontal(pl.col("_pod_samples").fill_null(0.0) * step_seconds, pl.lit(3600.0)) * pl.col(
        "gpu_fraction"
    )
    free = (3600.0 * pl.col("gpu_fraction") - pod_seconds).clip(lower_bound=0.0)
    host_free = free.sum().over("cluster", "hostname", "hour")
    spread = pl.when(host_free > 0).then(pl.col("_held_gpu_seconds").fill_null(0.0) * free / host_free).otherwise(0.0)
    allocated = pl.when(pl.col("_by_label")).then(label_allocated).otherwise(spread) + pod_seconds
    expected = max(1, 3600 // step_seconds)
    n_samples = pl.col("_samples").fill_null(0.0).round().cast(pl.Int64)
    frame = frame.with_columns(
        capacity_seconds=3600.0 * pl.col("gpu_fraction"),
        allocated_seconds=allocated,
        allocation_basis=pl.when(pl.col("_held_gpu_seconds").is_null() & (pl.col("_pod_samples").fill_null(0.0) > 0))
        .then(pl.lit("pod_label"))
        .when(pl.col("_held_gpu_seconds").is_null())
        .then(None)
        .when(pl.col("_by_label"))
        .then(pl.lit("hpc_job_label"))
        .when(pl.col("_min_run_gpus") >= pl.col("_host_capacity") - 1e-9)
        .then(pl.lit("host_whole"))
        .otherwise(pl.lit("host_spread")),
        active_seconds=pl.when(pl.col("_best_n") > 0).then(allocated * pl.col("_best_sum") / pl.col("_best_n")),
        n_samples=n_samples,
        attributed_samples=pl.col("attributed_samples").fill_null(0.0),
        unattributed_samples=pl.col("_unattributed").fill_null(0.0).round().cast(pl.Int64),
        expected_samples=pl.lit(expected, pl.Int64),
        coverage=pl.min_horizontal(n_samples / expected, pl.lit(1.0)),
        month=pl.lit(period_start.date().replace(day=1)),
    )
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort(*INSTANCE, "hour", nulls_last=False)
