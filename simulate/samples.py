"""Every DCGM sample of one simulated UTC day, vectorized over (instance x step).

`generate_day` is a pure function of its arguments: the same inputs give the same frame,
and a day generated alone equals that day generated after its predecessors. Randomness is
(a) per-day numpy noise from `SeedSequence([seed, day])` and (b) per-job levels hashed
from the allocation seeds (`shapes.hash_unit`), so a job spanning midnight keeps its level
and the GPUs of one job look alike.

`allocations` should hold every run of the simulated window, not only the day's: the
energy counter at the start of a day integrates the expected power of all earlier runs.
"""

from __future__ import annotations

import itertools
from datetime import date

import numpy as np
import polars as pl

from contracts.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_LABEL_SCHEMA
from simulate.energy_counter import (
    COUNTER_EPOCH,
    COUNTER_EPOCH_US,
    REBOOT_PERIOD_US,
    energy_counter_mj,
    expected_energy_mj,
    reboots,
)
from simulate.fleet import DAY_US, US, Fleet, Runs, assign_runs, make_fleet, make_runs, steps_from
from simulate.gauges import RATIO_FIELDS, sample_values

__all__ = [  # re-exported: callers import the sample generator's parts from here
    "CHUNK_INSTANCES",
    "COUNTER_EPOCH",
    "COUNTER_EPOCH_US",
    "DAY_US",
    "DEVICE_ONLY",
    "RATIO_FIELDS",
    "REBOOT_PERIOD_US",
    "US",
    "Fleet",
    "Runs",
    "assign_runs",
    "chunks",
    "day_start_us",
    "energy_counter_mj",
    "expected_energy_mj",
    "generate_day",
    "make_fleet",
    "make_runs",
    "reboots",
    "sample_values",
    "steps_from",
]

DEVICE_ONLY = ("gpu_util",)  # null on MIG rows; power and energy repeat the GPU's on each instance
CHUNK_INSTANCES = 64  # at least; a chunk ends at a GPU's last instance


def day_start_us(day: date) -> int:
    return (day - date(1970, 1, 1)).days * DAY_US


def generate_day(
    inventory: pl.DataFrame,
    allocations: pl.DataFrame,
    day: date,
    step_seconds: int,
    seed: int,
    cluster: str,
) -> pl.DataFrame:
    """All samples of [day, day+1) in RAW_SAMPLE_SCHEMA, sorted by (hostname, gpu, gpu_i_id, ts).

    Works through CHUNK_INSTANCES instances at a time (whole GPUs: a MIG GPU's power adds up
    its instances): small arrays stay in cache and are reused by the allocator instead of
    page-faulting fresh 50 MB arrays."""
    if step_seconds <= 0 or 86_400 % step_seconds:
        raise ValueError(f"step_seconds must divide 86400, got {step_seconds}")
    if day_start_us(day) < COUNTER_EPOCH_US:
        raise ValueError(f"days before {COUNTER_EPOCH.isoformat()} are not simulated (energy counter epoch)")
    fleet = make_fleet(inventory, seed)
    runs = make_runs(allocations, fleet)
    ds, step = day_start_us(day), step_seconds * US
    boot_times, boot_insts = reboots(fleet, seed, ds + DAY_US)
    rng = np.random.default_rng(np.random.SeedSequence([seed & (2**63 - 1), day.toordinal()]))
    parts = []
    for lo, hi in chunks(fleet, CHUNK_INSTANCES):
        mine = (boot_insts >= lo) & (boot_insts < hi)
        part_fleet, part_runs = fleet.slice(lo, hi), runs.on_instances(lo, hi)
        run_grid = assign_runs(part_runs, hi - lo, ds, step, 86_400 // step_seconds)
        values = sample_values(part_fleet, part_runs, run_grid, ds, step, rng)
        values["energy_mj"] = energy_counter_mj(
            part_fleet, part_runs, values["power_w"], ds, step, (boot_times[mine], boot_insts[mine] - lo), seed
        )
        parts.append(_assemble(part_fleet, part_runs, run_grid, values, day, ds, step, cluster))
    return pl.concat(parts, rechunk=False) if parts else pl.DataFrame(schema=RAW_SAMPLE_SCHEMA)


def chunks(fleet: Fleet, size: int) -> list[tuple[int, int]]:
    """(lo, hi) row ranges of about `size` rows that never split a GPU's instances."""
    starts = [*fleet.gpu_starts().tolist(), fleet.frame.height]
    bounds = [0]
    for start in starts[1:]:
        if start >= bounds[-1] + size or start == fleet.frame.height:
            bounds.append(start)
    return list(itertools.pairwise(bounds)) if fleet.frame.height else []


def _assemble(
    fleet: Fleet,
    runs: Runs,
    run_grid: np.ndarray,
    values: dict[str, np.ndarray],
    day: date,
    ds: int,
    step: int,
    cluster: str,
) -> pl.DataFrame:
    n_inst, n_steps = run_grid.shape
    labels = fleet.frame.select([pl.col(c).cast(t) for c, t in SAMPLE_LABEL_SCHEMA.items() if c != "hpc_job"])
    frame = labels.gather(pl.Series(np.repeat(np.arange(n_inst, dtype=np.uint32), n_steps)))
    jobs = pl.Series("hpc_job", [None, *runs.job_id], dtype=pl.String).gather(pl.Series(run_grid.ravel()))
    ts = pl.Series("ts", np.tile(ds + step * np.arange(n_steps, dtype=np.int64), n_inst)).cast(pl.Datetime("us"))
    mig = not fleet.whole.all()
    gauges = [pl.Series(name, v.ravel(), nan_to_null=mig and name in DEVICE_ONLY) for name, v in values.items()]
    workload = [pl.lit(None, pl.String).alias(c) for c in ("pod", "namespace", "container")]
    frame = frame.with_columns(
        pl.lit(cluster, pl.String).alias("cluster"),
        pl.lit(day, pl.Date).alias("day"),
        ts,
        jobs,
        *gauges,
        *workload,
        pl.lit("{}", pl.String).alias("extra_labels"),
    )
    return frame.select(list(RAW_SAMPLE_SCHEMA))
