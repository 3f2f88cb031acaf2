"""Every DCGM sample of one simulated UTC day, vectorized over (instance x step).

`generate_day` is a pure function of its arguments: the same inputs give the same frame,
and a day generated alone equals that day generated after its predecessors. Randomness is
(a) per-day numpy noise from `SeedSequence([seed, day])` and (b) per-job levels hashed
from the allocation seeds (`shapes.hash_unit`), so a job spanning midnight keeps its level.

`allocations` should hold every run of the simulated window (not only the day's): the
energy counter at the start of the day integrates the earlier runs' expected power.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import polars as pl

from cardhours.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_LABEL_SCHEMA
from cardhours.simulate import shapes

US = 1_000_000
DAY_US = 86_400 * US
_NO_END_US = np.iinfo(np.int64).max // 4
_INVENTORY_LABELS = [c for c in SAMPLE_LABEL_SCHEMA if c != "hpc_job"]


@dataclass(frozen=True)
class Fleet:
    """The inventory, sorted like the output, with per-instance constants."""

    frame: pl.DataFrame
    whole: np.ndarray  # bool: a whole GPU (not a MIG instance)
    limit_w: np.ndarray
    memory_mib: np.ndarray
    idle_w: np.ndarray  # this GPU's idle power (per-GPU jitter around the trace's)
    key: np.ndarray  # uint64 hash of uuid / instance, stable across runs

    @property
    def size(self) -> int:
        return self.frame.height


@dataclass(frozen=True)
class Runs:
    """Allocations joined to instances, with their per-run shape constants (one per row)."""

    inst: np.ndarray
    start_us: np.ndarray
    end_us: np.ndarray
    tail_us: np.ndarray  # idle tail start (== end_us for kinds without a tail)
    kind: list[str]
    job_seed: np.ndarray
    act: np.ndarray  # activity factor
    run_w: np.ndarray  # mean power while running
    tail_w: np.ndarray  # mean power in the idle tail
    fb_mib: np.ndarray  # memory used while running (baseline included)
    job_id: list[str]


def make_fleet(inventory: pl.DataFrame, seed: int) -> Fleet:
    frame = inventory.sort(["hostname", "gpu", "gpu_i_id"], nulls_last=False)
    whole = frame["gpu_i_id"].is_null().to_numpy()
    limit = np.array([shapes.power_limit_w(m) for m in frame["gpu_model"].to_list()])
    names = [f"{u}/{g}" for u, g in zip(frame["uuid"].to_list(), frame["gpu_i_id"].to_list(), strict=True)]
    key = np.array([int.from_bytes(hashlib.blake2b(n.encode(), digest_size=8).digest(), "little") for n in names],
                   dtype=np.uint64)
    jitter = 1.0 + 0.03 * (2.0 * shapes.hash_unit(key ^ shapes.as_u64(seed), 7) - 1.0)
    idle_w = limit * shapes.IDLE_POWER_FRAC * jitter
    memory = frame["memory_mib"].cast(pl.Float64).to_numpy()
    return Fleet(frame, whole, limit, memory, idle_w, key)


def make_runs(allocations: pl.DataFrame, fleet: Fleet) -> Runs:
    index = fleet.frame.select("hostname", "gpu", "gpu_i_id").with_row_index("inst")
    joined = allocations.with_columns(pl.col("gpu").cast(pl.Int16), pl.col("gpu_i_id").cast(pl.Int16)).join(
        index.with_columns(pl.col("gpu").cast(pl.Int16), pl.col("gpu_i_id").cast(pl.Int16)),
        on=["hostname", "gpu", "gpu_i_id"], how="left", nulls_equal=True, maintain_order="left")
    if joined["inst"].null_count():
        missing = joined.filter(pl.col("inst").is_null()).select("hostname", "gpu", "gpu_i_id").unique()
        raise ValueError(f"allocations on instances missing from the inventory: {missing.rows()[:5]}")
    unknown = set(joined["kind"].unique().to_list()) - set(shapes.ALLOCATION_KINDS)
    if unknown:
        raise ValueError(f"unknown allocation kinds {sorted(unknown)}")
    joined = joined.with_columns(job_seed=pl.col("seed").min().over("job_id_raw", "run_index"))
    inst = joined["inst"].to_numpy().astype(np.int64)
    start = joined["start_time"].dt.epoch("us").to_numpy()
    end = joined["end_time"].dt.epoch("us").fill_null(_NO_END_US).to_numpy()
    job_seed = joined["job_seed"].to_numpy().astype(np.int64)
    kinds = joined["kind"].to_list()
    run = [shapes.SHAPES[shapes.RUN_SHAPE[k]] for k in kinds]
    act = shapes.activity_factor(job_seed, fleet.key[inst], np.array([s.job_spread for s in run]))
    has_tail = np.array([k == "idle_tail" for k in kinds])
    tail = np.where(has_tail, end - (shapes.tail_seconds(job_seed, (end - start) / US) * US).astype(np.int64), end)
    limit, idle_w = fleet.limit_w[inst], fleet.idle_w[inst]
    run_w = idle_w + limit * (np.array([s.power_frac for s in run]) - shapes.IDLE_POWER_FRAC) * act
    tail_w = idle_w + limit * (shapes.SHAPES[shapes.TAIL_SHAPE].power_frac - shapes.IDLE_POWER_FRAC)
    fb_frac = shapes.BASELINE_FB_FRAC + np.array([s.fb_frac for s in run]) * shapes.memory_factor(job_seed)
    fb = np.rint(fleet.memory_mib[inst] * fb_frac)
    return Runs(inst, start, end, tail, kinds, job_seed, act, run_w, tail_w, fb, joined["job_id_raw"].to_list())


def assign_runs(runs: Runs, n_inst: int, day_us: int, step_us: int, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per (instance, step): 1 + the index of the run holding it then, 0 when none.

    A sample at t belongs to a run iff start <= t < end: steps ceil((start-day)/step) ..
    ceil((end-day)/step) - 1. Returns the id grid and the indices of the day's runs."""
    k0 = np.clip(-((day_us - runs.start_us) // step_us), 0, n_steps)
    k1 = np.clip(-((day_us - runs.end_us) // step_us), 0, n_steps)
    today = np.flatnonzero(k1 > k0)
    order = today[np.lexsort((k0[today], runs.inst[today]))]
    inst, lo, hi = runs.inst[order], k0[order], k1[order]
    clash = (inst[1:] == inst[:-1]) & (lo[1:] < hi[:-1])
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        raise ValueError(f"overlapping allocations on one instance: {runs.job_id[order[i]]} and {runs.job_id[order[i + 1]]}")
    marks = np.zeros((n_inst, n_steps + 1), dtype=np.int64)
    np.add.at(marks, (inst, lo), order + 1)
    np.add.at(marks, (inst, hi), -(order + 1))
    return np.cumsum(marks, axis=1)[:, :n_steps], order


def day_start_us(day: date) -> int:
    return (day - date(1970, 1, 1)).days * DAY_US


def _level_table(fleet: Fleet, runs: Runs) -> dict[str, np.ndarray]:
    """Per-sample means and noise by row: [idle of each instance | each run | each run's tail]."""
    idle, tail = shapes.SHAPES["idle"], shapes.SHAPES[shapes.TAIL_SHAPE]
    run = [shapes.SHAPES[shapes.RUN_SHAPE[k]] for k in runs.kind]
    limit, n_inst, n_runs = fleet.limit_w, fleet.size, len(runs.kind)
    run_limit = limit[runs.inst]

    def stack(field: str, run_scale: np.ndarray | float = 1.0) -> np.ndarray:
        at_run = np.array([getattr(s, field) for s in run], dtype=np.float64) * run_scale
        return np.concatenate([np.full(n_inst, getattr(idle, field)), at_run, np.full(n_runs, getattr(tail, field))])

    table = {f: stack(f, runs.act) for f in ("gr_engine", "sm_active", "sm_occupancy", "tensor", "dram")}
    table["util"] = stack("gpu_util", runs.act)
    saw = np.flatnonzero([s.util_mode == shapes.UTIL_SAWTOOTH for s in run])
    table["util"][n_inst + saw] = shapes.SAWTOOTH_HIGH * runs.act[saw]  # level of the high phase
    table["util_sd"] = stack("util_sd")
    table["rel_sd"] = stack("rel_sd")
    table["mode"] = stack("util_mode").astype(np.int8)
    psd = np.array([s.power_sd_frac for s in run])
    table["power"] = np.concatenate([fleet.idle_w, runs.run_w, runs.tail_w])
    table["power_sd"] = np.concatenate([limit * idle.power_sd_frac, run_limit * psd, run_limit * tail.power_sd_frac])
    baseline = np.rint(fleet.memory_mib * shapes.BASELINE_FB_FRAC)
    table["fb"] = np.concatenate([baseline, runs.fb_mib, runs.fb_mib])
    return table


def _sample_rows(fleet: Fleet, runs: Runs, run_grid: np.ndarray, ds: int, step: int) -> np.ndarray:
    """Per sample, its row in the level table (init samples read their instance's idle row)."""
    n_inst, n_steps = run_grid.shape
    k_start = -((ds - runs.start_us) // step)  # first step of the run, relative to this day
    k_total = -((ds - runs.end_us) // step) - k_start
    n_init = max(1, -(-int(shapes.INIT_SECONDS * US) // step))
    first = np.concatenate([[0], k_start + np.where(k_total > n_init, n_init, 0)])
    tail_k = np.concatenate([[n_steps], -((ds - runs.tail_us) // step)])
    k = np.arange(n_steps)[None, :]
    active = (run_grid > 0) & (k >= first[run_grid])
    in_tail = k >= tail_k[run_grid]
    inst = np.arange(n_inst)[:, None]
    return np.where(active, n_inst + run_grid - 1 + np.where(in_tail, len(runs.kind), 0), inst)


def sample_values(fleet: Fleet, runs: Runs, run_grid: np.ndarray, ds: int, step: int,
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The nine non-counter metrics per (instance, step); NaN where DCGM exports nothing."""
    table = _level_table(fleet, runs)
    row = _sample_rows(fleet, runs, run_grid, ds, step)
    z_act = rng.standard_normal(row.shape, dtype=np.float32)
    z_pow = rng.standard_normal(row.shape, dtype=np.float32)
    rel = table["rel_sd"][row]
    out = {"gpu_util": _gpu_util(table, row, run_grid, runs, ds, step, z_act, rng)}
    for name, field in (("gr_engine_active", "gr_engine"), ("sm_active", "sm_active"),
                        ("sm_occupancy", "sm_occupancy"), ("tensor_active", "tensor"), ("dram_active", "dram")):
        out[name] = np.round(shapes.ratio_values(table[field][row], rel, z_act), 5)
    used = table["fb"][row]
    out["fb_used_mib"] = used
    out["fb_free_mib"] = fleet.memory_mib[:, None] - used
    power = table["power"][row] + table["power_sd"][row] * z_pow
    out["power_w"] = np.round(np.clip(power, 0.0, fleet.limit_w[:, None]), 3)
    mig = ~fleet.whole
    out["gpu_util"][mig] = np.nan
    out["power_w"][mig] = np.nan
    return out


def _gpu_util(table: dict[str, np.ndarray], row: np.ndarray, run_grid: np.ndarray, runs: Runs, ds: int,
              step: int, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """GPU_UTIL: integer percent; sparse for bursty, a duty-cycle sawtooth for starved."""
    util = shapes.level_util(table["util"][row], table["util_sd"][row], z)
    mode = table["mode"][row]
    sparse = np.nonzero(mode == shapes.UTIL_SPARSE)
    u = rng.random((2, sparse[0].size))
    util[sparse] = shapes.sparse_util(table["util"][row[sparse]], shapes.BURST_UTIL_MAX, u[0], u[1])
    saw = np.nonzero(mode == shapes.UTIL_SAWTOOTH)
    run = run_grid[saw] - 1
    seconds = (ds + saw[1].astype(np.int64) * step - runs.start_us[run]) / US
    seed = runs.job_seed[run]
    u = rng.random((2, run.size))
    util[saw] = shapes.sawtooth_util(seconds, shapes.sawtooth_period(seed), shapes.sawtooth_phase(seed),
                                     table["util"][row[saw]], z[saw], u[0], u[1])
    return util


COUNTER_EPOCH_US = (date(2020, 1, 1) - date(1970, 1, 1)).days * DAY_US  # counters integrate from here
REBOOT_PERIOD_US = 30 * DAY_US  # one GPU of the fleet reboots once per period (any 30 days hold one)


def reboots(fleet: Fleet, seed: int, until_us: int) -> tuple[np.ndarray, np.ndarray]:
    """(time_us, instance) of every simulated reboot before until_us, oldest first."""
    whole = np.flatnonzero(fleet.whole)
    count = max(0, (until_us - COUNTER_EPOCH_US) // REBOOT_PERIOD_US + 1)
    if whole.size == 0 or count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    seed_key = shapes.splitmix64(shapes.as_u64([seed]))
    phase = shapes.hash_unit(seed_key, 8)[0]
    k = np.arange(count, dtype=np.int64)
    times = COUNTER_EPOCH_US + ((k + phase) * REBOOT_PERIOD_US).astype(np.int64)
    pick = whole[(shapes.hash_unit(seed_key + k.astype(np.uint64), 9) * whole.size).astype(np.int64)]
    keep = times < until_us
    return times[keep], pick[keep]


def expected_energy_mj(fleet: Fleet, runs: Runs, a_us: np.ndarray, b_us: np.ndarray) -> np.ndarray:
    """Per instance: the closed-form energy over [a_us, b_us) from the runs' mean powers."""
    def overlap_s(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        a, b = a_us[runs.inst], b_us[runs.inst]
        return np.maximum(0, np.minimum(hi, b) - np.maximum(lo, a)) / US

    idle_w = fleet.idle_w[runs.inst]
    extra = (overlap_s(runs.start_us, runs.tail_us) * (runs.run_w - idle_w)
             + overlap_s(runs.tail_us, runs.end_us) * (runs.tail_w - idle_w))
    per_inst = fleet.idle_w * (b_us - a_us) / US + np.bincount(runs.inst, extra, minlength=fleet.size)
    return 1000.0 * per_inst


def energy_counter_mj(fleet: Fleet, runs: Runs, power_w: np.ndarray, ds: int, step: int, seed: int) -> np.ndarray:
    """TOTAL_ENERGY_CONSUMPTION per (instance, step): mJ since boot, NaN on MIG rows.

    The counter at day start is closed-form (base + expected energy since the last boot),
    so any day can be generated alone; within the day it follows the sampled power, scaled
    so the day adds exactly its closed-form energy (monotonic, continuous across days)."""
    de = ds + DAY_US
    times, insts = reboots(fleet, seed, de)
    before = times <= ds
    last_boot = np.full(fleet.size, COUNTER_EPOCH_US, dtype=np.int64)
    np.maximum.at(last_boot, insts[before], times[before])
    base = np.floor(shapes.hash_unit(fleet.key ^ shapes.as_u64(seed), 10) * 2e11)
    start = np.where(last_boot == COUNTER_EPOCH_US, base, 0.0)
    start += expected_energy_mj(fleet, runs, last_boot, np.full(fleet.size, ds))
    day_mj = expected_energy_mj(fleet, runs, np.full(fleet.size, ds), np.full(fleet.size, de))
    inc = np.where(fleet.whole[:, None], power_w, 0.0) * (step / US * 1000.0)
    done = np.cumsum(inc, axis=1) - inc  # energy before each sample
    total = np.maximum(done[:, -1] + inc[:, -1], 1e-9)
    counter = start[:, None] + done * (day_mj / total)[:, None]
    for when, inst in zip(times[~before], insts[~before], strict=True):
        counter[inst] = _rebooted_row(fleet, runs, inst, done[inst], inc[inst], start[inst], when, ds, step)
    counter = np.floor(counter)
    counter[~fleet.whole] = np.nan
    return counter


def _rebooted_row(fleet: Fleet, runs: Runs, inst: int, done: np.ndarray, inc: np.ndarray, start: float,
                  when: int, ds: int, step: int) -> np.ndarray:
    """One instance's counter on the day it reboots at `when`: reset to ~0 at that moment."""
    k_r = -((ds - when) // step)  # first sample at or after the reboot
    def span(a: int, b: int) -> float:
        a_us, b_us = np.full(fleet.size, a), np.full(fleet.size, b)
        return float(expected_energy_mj(fleet, runs, a_us, b_us)[inst])

    t_r = ds + k_r * step
    before = start + done[:k_r] * span(ds, when) / max(float(done[k_r - 1] + inc[k_r - 1]), 1e-9)
    after_done = done[k_r:] - (done[k_r] if k_r < done.size else 0.0)
    after_total = max(float(after_done[-1] + inc[-1]), 1e-9) if after_done.size else 1.0
    after = span(when, t_r) + after_done * span(t_r, ds + DAY_US) / after_total
    return np.concatenate([before, after])


def generate_day(
    inventory: pl.DataFrame,
    allocations: pl.DataFrame,
    day: date,
    step_seconds: int,
    seed: int,
    cluster: str,
) -> pl.DataFrame:
    """All samples of [day, day+1) in RAW_SAMPLE_SCHEMA, sorted by (hostname, gpu, gpu_i_id, ts)."""
    if step_seconds <= 0 or 86_400 % step_seconds:
        raise ValueError(f"step_seconds must divide 86400, got {step_seconds}")
    fleet = make_fleet(inventory, seed)
    runs = make_runs(allocations, fleet)
    ds, step = day_start_us(day), step_seconds * US
    n_steps = 86_400 // step_seconds
    run_grid, _ = assign_runs(runs, fleet.size, ds, step, n_steps)
    rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFFFFFF, day.toordinal()]))
    values = sample_values(fleet, runs, run_grid, ds, step, rng)
    values["energy_mj"] = energy_counter_mj(fleet, runs, values["power_w"], ds, step, seed)
    return _assemble(fleet, runs, run_grid, values, day, ds, step, cluster)


def _assemble(fleet: Fleet, runs: Runs, run_grid: np.ndarray, values: dict[str, np.ndarray],
              day: date, ds: int, step: int, cluster: str) -> pl.DataFrame:
    n_inst, n_steps = run_grid.shape
    rows = np.repeat(np.arange(n_inst, dtype=np.uint32), n_steps)
    labels = fleet.frame.select([pl.col(c).cast(t) for c, t in SAMPLE_LABEL_SCHEMA.items() if c != "hpc_job"])
    frame = labels.gather(pl.Series(rows))
    job = pl.Series("hpc_job", [None, *runs.job_id], dtype=pl.String).gather(pl.Series(run_grid.ravel()))
    ts = np.tile(ds + step * np.arange(n_steps, dtype=np.int64), n_inst)
    columns = [
        pl.Series("cluster", [cluster], dtype=pl.String).gather(np.zeros(n_inst * n_steps, dtype=np.uint32)),
        pl.Series("day", [day], dtype=pl.Date).gather(np.zeros(n_inst * n_steps, dtype=np.uint32)),
        pl.Series("ts", ts).cast(pl.Datetime("us")),
        job,
        *[pl.Series(name, v.ravel(), nan_to_null=True) for name, v in values.items()],
    ]
    return frame.with_columns(columns).select(list(RAW_SAMPLE_SCHEMA)).cast(RAW_SAMPLE_SCHEMA)
