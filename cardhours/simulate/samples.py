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

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import date

import numpy as np
import polars as pl

from cardhours.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_LABEL_SCHEMA
from cardhours.simulate import shapes

US = 1_000_000
DAY_US = 86_400 * US
_NO_END_US = np.iinfo(np.int64).max // 4  # a run still going when the window ends
RATIO_FIELDS = {"gr_engine_active": "gr_engine", "sm_active": "sm_active", "sm_occupancy": "sm_occupancy",
                "tensor_active": "tensor", "dram_active": "dram"}
DEVICE_ONLY = ("gpu_util", "power_w", "energy_mj")  # null on MIG rows
CHUNK_INSTANCES = 64


@dataclass(frozen=True)
class Fleet:
    """The inventory sorted like the output, with per-instance constants."""

    frame: pl.DataFrame
    whole: np.ndarray  # bool: a whole GPU, not a MIG instance
    limit_w: np.ndarray
    memory_mib: np.ndarray
    idle_w: np.ndarray  # this GPU's idle power (a per-GPU jitter around the trace's)
    key: np.ndarray  # uint64 hash of uuid and instance id, stable across runs

    def slice(self, lo: int, hi: int) -> Fleet:
        return Fleet(frame=self.frame.slice(lo, hi - lo), whole=self.whole[lo:hi], limit_w=self.limit_w[lo:hi],
                     memory_mib=self.memory_mib[lo:hi], idle_w=self.idle_w[lo:hi], key=self.key[lo:hi])


@dataclass(frozen=True)
class Runs:
    """Allocations joined to instances, with their per-run constants (one per row)."""

    inst: np.ndarray
    start_us: np.ndarray
    end_us: np.ndarray
    tail_us: np.ndarray  # start of the idle tail (== end_us for kinds without one)
    shape: np.ndarray  # index into shapes.SHAPE_NAMES of the shape while running
    job_seed: np.ndarray  # shared by the GPUs of one job run
    act: np.ndarray  # activity factor around the kind mean
    run_w: np.ndarray  # mean power while running
    tail_w: np.ndarray  # mean power in the idle tail
    fb_mib: np.ndarray  # memory used while running, driver baseline included
    job_id: np.ndarray  # object array of str

    def on_instances(self, lo: int, hi: int) -> Runs:
        """The runs on instances lo..hi-1, renumbered from 0."""
        keep = (self.inst >= lo) & (self.inst < hi)
        fields = {f.name: getattr(self, f.name)[keep] for f in dataclasses.fields(self)}
        return Runs(**fields | {"inst": fields["inst"] - lo})


def make_fleet(inventory: pl.DataFrame, seed: int) -> Fleet:
    frame = inventory.sort(["hostname", "gpu", "gpu_i_id"], nulls_last=False)
    if frame.select("hostname", "gpu", "gpu_i_id").is_duplicated().any():
        raise ValueError("inventory lists an instance (hostname, gpu, gpu_i_id) twice")
    limit = np.array([shapes.power_limit_w(m) for m in frame["gpu_model"].to_list()])
    names = [f"{u}/{g}" for u, g in zip(frame["uuid"].to_list(), frame["gpu_i_id"].to_list(), strict=True)]
    digests = [hashlib.blake2b(n.encode(), digest_size=8).digest() for n in names]
    key = np.array([int.from_bytes(d, "little") for d in digests], dtype=np.uint64)
    jitter = 1.0 + 0.03 * (2.0 * shapes.hash_unit(key ^ shapes.as_u64(seed), 7) - 1.0)
    return Fleet(frame=frame, whole=frame["gpu_i_id"].is_null().to_numpy(), limit_w=limit,
                 memory_mib=frame["memory_mib"].cast(pl.Float64).to_numpy(),
                 idle_w=limit * shapes.IDLE_POWER_FRAC * jitter, key=key)


def _join_instances(allocations: pl.DataFrame, fleet: Fleet) -> pl.DataFrame:
    keys = {"gpu": pl.Int16, "gpu_i_id": pl.Int16}
    index = fleet.frame.select("hostname", "gpu", "gpu_i_id").cast(keys).with_row_index("inst")
    joined = allocations.cast(keys).join(index, on=["hostname", "gpu", "gpu_i_id"], how="left",
                                         nulls_equal=True, maintain_order="left")
    missing = joined.filter(pl.col("inst").is_null()).select("hostname", "gpu", "gpu_i_id")
    if missing.height:
        raise ValueError(f"allocations on instances not in the inventory: {missing.rows()[:5]}")
    return joined.with_columns(job_seed=pl.col("seed").min().over("job_id_raw", "run_index"))


def make_runs(allocations: pl.DataFrame, fleet: Fleet) -> Runs:
    joined = _join_instances(allocations, fleet)
    inst = joined["inst"].to_numpy().astype(np.int64)
    start = joined["start_time"].dt.epoch("us").to_numpy()
    end = joined["end_time"].dt.epoch("us").fill_null(_NO_END_US).to_numpy()
    job_seed = joined["job_seed"].to_numpy().astype(np.int64)
    kinds = joined["kind"].to_list()
    shape = shapes.run_shape_index(kinds)
    act = shapes.activity_factor(job_seed, fleet.key[inst], shapes.shape_param("job_spread")[shape])
    tail_s = shapes.tail_seconds(job_seed, (end - start) / US)
    tail = np.where(np.array(kinds) == "idle_tail", end - (tail_s * US).astype(np.int64), end)
    limit, idle_w = fleet.limit_w[inst], fleet.idle_w[inst]
    run_w = idle_w + limit * (shapes.shape_param("power_frac")[shape] - shapes.IDLE_POWER_FRAC) * act
    tail_w = idle_w + limit * (shapes.SHAPES[shapes.TAIL_SHAPE].power_frac - shapes.IDLE_POWER_FRAC)
    held = shapes.BASELINE_FB_FRAC + shapes.shape_param("fb_frac")[shape] * shapes.memory_factor(job_seed)
    return Runs(inst=inst, start_us=start, end_us=end, tail_us=tail, shape=shape, job_seed=job_seed, act=act,
                run_w=run_w, tail_w=tail_w, fb_mib=np.rint(fleet.memory_mib[inst] * held),
                job_id=joined["job_id_raw"].cast(pl.String).to_numpy().astype(object))


def steps_from(t_us: np.ndarray, ds: int, step: int) -> np.ndarray:
    """Index of the first grid step at or after t (ceil), relative to day start ds."""
    return -((ds - t_us) // step)


def assign_runs(runs: Runs, n_inst: int, ds: int, step: int, n_steps: int) -> np.ndarray:
    """Per (instance, step): 1 + the index of the run holding it (start <= t < end), else 0."""
    k0 = np.clip(steps_from(runs.start_us, ds, step), 0, n_steps)
    k1 = np.clip(steps_from(runs.end_us, ds, step), 0, n_steps)
    today = np.flatnonzero(k1 > k0)
    order = today[np.lexsort((k0[today], runs.inst[today]))]
    lo, hi = runs.inst[order] * n_steps + k0[order], runs.inst[order] * n_steps + k1[order]
    clash = np.flatnonzero(lo[1:] < hi[:-1])
    if clash.size:
        a, b = order[clash[0]], order[clash[0] + 1]
        raise ValueError(f"overlapping allocations on one instance: jobs {runs.job_id[a]} and {runs.job_id[b]}")
    edges = np.concatenate([[0], np.column_stack([lo, hi]).ravel(), [n_inst * n_steps]])
    ids = np.zeros(edges.size - 1, dtype=np.int32)
    ids[1::2] = order + 1
    return np.repeat(ids, np.diff(edges)).reshape(n_inst, n_steps)


def _level_table(fleet: Fleet, runs: Runs) -> dict[str, np.ndarray]:
    """Per-sample means and noise by row: [idle of each instance | each run | each run's tail]."""
    n_inst, n_runs = fleet.frame.height, runs.inst.size
    tail = shapes.SHAPES[shapes.TAIL_SHAPE]
    idle_index = shapes.SHAPE_NAMES.index("idle")

    def stack(field: str, run_scale: np.ndarray | float = 1.0) -> np.ndarray:
        per_shape = shapes.shape_param(field)
        parts = [np.full(n_inst, per_shape[idle_index]), per_shape[runs.shape] * run_scale,
                 np.full(n_runs, getattr(tail, field))]
        return np.concatenate(parts).astype(np.float32)

    table = {field: stack(field, runs.act) for field in RATIO_FIELDS.values()}
    table["util"] = stack("gpu_util", runs.act)
    saw = np.flatnonzero(shapes.shape_param("util_mode")[runs.shape] == shapes.UTIL_SAWTOOTH)
    table["util"][n_inst + saw] = shapes.SAWTOOTH_HIGH * runs.act[saw]  # level of the high phase
    table |= {"util_sd": stack("util_sd"), "rel_sd": stack("rel_sd"), "mode": stack("util_mode").astype(np.int8)}
    run_limit = fleet.limit_w[runs.inst]
    table["power"] = np.concatenate([fleet.idle_w, runs.run_w, runs.tail_w]).astype(np.float32)
    limits = np.concatenate([fleet.limit_w, run_limit, run_limit]).astype(np.float32)
    table["power_sd"] = limits * stack("power_sd_frac")
    baseline = np.rint(fleet.memory_mib * shapes.BASELINE_FB_FRAC)
    table["fb"] = np.concatenate([baseline, runs.fb_mib, runs.fb_mib]).astype(np.float32)
    return table


def _sample_rows(runs: Runs, run_grid: np.ndarray, ds: int, step: int) -> np.ndarray:
    """Per sample, its level-table row; CUDA-init samples read their instance's idle row."""
    n_inst, n_steps = run_grid.shape
    k_start = steps_from(runs.start_us, ds, step)
    k_total = steps_from(runs.end_us, ds, step) - k_start
    n_init = max(1, -(-int(shapes.INIT_SECONDS * US) // step))
    first_active = np.concatenate([[0], k_start + np.where(k_total > n_init, n_init, 0)])
    tail_k = np.concatenate([[n_steps], steps_from(runs.tail_us, ds, step)])
    k = np.arange(n_steps, dtype=np.int32)[None, :]
    active = (run_grid > 0) & (k >= first_active[run_grid])
    offset = np.where(k >= tail_k[run_grid], n_inst + runs.inst.size - 1, n_inst - 1).astype(np.int32)
    return np.where(active, run_grid + offset, np.arange(n_inst, dtype=np.int32)[:, None])


def _quantize(values: np.ndarray, scale: float) -> np.ndarray:
    """float32 -> float64 rounded to 1/scale (ratios to 1e-5 like GPM's %.3f, power to mW)."""
    return np.rint(values * np.float32(scale)).astype(np.float64) / scale


def sample_values(fleet: Fleet, runs: Runs, run_grid: np.ndarray, ds: int, step: int,
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The nine gauge metrics per (instance, step), float64; NaN where DCGM exports nothing."""
    table = _level_table(fleet, runs)
    row = _sample_rows(runs, run_grid, ds, step)
    z_act = rng.standard_normal(row.shape, dtype=np.float32)
    z_pow = rng.standard_normal(row.shape, dtype=np.float32)
    rel = table["rel_sd"][row]
    out = {"gpu_util": _gpu_util(table, row, run_grid, runs, ds, step, z_act, rng).astype(np.float64)}
    for column, field in RATIO_FIELDS.items():
        out[column] = _quantize(shapes.ratio_values(table[field][row], rel, z_act), 1e5)
    used = table["fb"][row]
    out["fb_used_mib"] = used.astype(np.float64)
    out["fb_free_mib"] = fleet.memory_mib[:, None] - out["fb_used_mib"]
    power = table["power"][row] + table["power_sd"][row] * z_pow
    out["power_w"] = _quantize(np.clip(power, 0.0, fleet.limit_w[:, None].astype(np.float32)), 1e3)
    for name in ("gpu_util", "power_w"):  # dcgm-exporter has no per-instance device util/power
        out[name][~fleet.whole] = np.nan
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


COUNTER_EPOCH = date(2020, 1, 1)  # energy counters integrate from here (plus a per-GPU base)
COUNTER_EPOCH_US = (COUNTER_EPOCH - date(1970, 1, 1)).days * DAY_US
REBOOT_PERIOD_US = 30 * DAY_US  # one GPU of the fleet reboots once per period: any 30 days hold one


def reboots(fleet: Fleet, seed: int, until_us: int) -> tuple[np.ndarray, np.ndarray]:
    """(time_us, instance) of every simulated reboot before until_us, oldest first."""
    whole = np.flatnonzero(fleet.whole)
    count = max(0, (until_us - COUNTER_EPOCH_US) // REBOOT_PERIOD_US + 1)
    if whole.size == 0 or count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    seed_key = shapes.splitmix64(shapes.as_u64([seed]))
    k = np.arange(count, dtype=np.int64)
    times = COUNTER_EPOCH_US + ((k + shapes.hash_unit(seed_key, 8)[0]) * REBOOT_PERIOD_US).astype(np.int64)
    pick = whole[(shapes.hash_unit(seed_key + k.astype(np.uint64), 9) * whole.size).astype(np.int64)]
    keep = times < until_us
    return times[keep], pick[keep]


def expected_energy_mj(fleet: Fleet, runs: Runs, a_us: np.ndarray | int, b_us: np.ndarray | int) -> np.ndarray:
    """Per instance: the closed-form energy over [a_us, b_us) (arrays per instance, or scalars).

    Ignores the seconds of CUDA init; the counter scaling absorbs that."""
    a_us, b_us = np.broadcast_to(a_us, fleet.idle_w.shape), np.broadcast_to(b_us, fleet.idle_w.shape)
    a, b = a_us[runs.inst], b_us[runs.inst]

    def overlap_s(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.maximum(0, np.minimum(hi, b) - np.maximum(lo, a)) / US

    idle_w = fleet.idle_w[runs.inst]
    extra = (overlap_s(runs.start_us, runs.tail_us) * (runs.run_w - idle_w)
             + overlap_s(runs.tail_us, runs.end_us) * (runs.tail_w - idle_w))
    per_inst = fleet.idle_w * (b_us - a_us) / US + np.bincount(runs.inst, extra, minlength=fleet.idle_w.size)
    return 1000.0 * per_inst


def energy_counter_mj(fleet: Fleet, runs: Runs, power_w: np.ndarray, ds: int, step: int,
                      boots: tuple[np.ndarray, np.ndarray], seed: int) -> np.ndarray:
    """TOTAL_ENERGY_CONSUMPTION per (instance, step): integer mJ since boot, NaN on MIG rows.

    `boots` are (time_us, instance) of the reboots before the day's end (`reboots`). At day
    start the counter is closed-form (base + expected energy since the last boot), so any
    day can be generated alone; within the day it follows the sampled power, scaled so the
    day adds exactly its closed-form energy: monotonic, and continuous across days."""
    times, insts = boots
    before = times <= ds
    last_boot = np.full(fleet.idle_w.size, COUNTER_EPOCH_US, dtype=np.int64)
    np.maximum.at(last_boot, insts[before], times[before])
    base = np.floor(shapes.hash_unit(fleet.key ^ shapes.as_u64(seed), 10) * 2e11)  # energy before the epoch
    start = np.where(last_boot == COUNTER_EPOCH_US, base, 0.0) + expected_energy_mj(fleet, runs, last_boot, ds)
    inc = np.where(fleet.whole[:, None], power_w, 0.0) * (step / US * 1000.0)
    done = np.cumsum(inc, axis=1) - inc  # sampled energy before each sample
    scale = expected_energy_mj(fleet, runs, ds, ds + DAY_US) / np.maximum(done[:, -1] + inc[:, -1], 1e-9)
    counter = start[:, None] + done * scale[:, None]
    for when, inst in zip(times[~before].tolist(), insts[~before].tolist(), strict=True):
        counter[inst] = _rebooted_row(fleet, runs, inst, done[inst], inc[inst], start[inst], when, ds, step)
    counter = np.floor(counter)
    counter[~fleet.whole] = np.nan
    return counter


def _rebooted_row(fleet: Fleet, runs: Runs, inst: int, done: np.ndarray, inc: np.ndarray, start: float,
                  when: int, ds: int, step: int) -> np.ndarray:
    """One GPU's counter on the day it reboots at `when` (ds < when < ds + 1 day): back to ~0."""
    k_r = int(steps_from(np.int64(when), ds, step))  # first sample at or after the reboot (>= 1)
    t_r = ds + k_r * step

    def span(a: int, b: int) -> float:
        return float(expected_energy_mj(fleet, runs, a, b)[inst])

    before = start + done[:k_r] * span(ds, when) / max(float(done[k_r - 1] + inc[k_r - 1]), 1e-9)
    since = done[k_r:] - done[min(k_r, done.size - 1)]
    sampled_after = float(since[-1] + inc[-1]) if since.size else 1.0
    after = span(when, t_r) + since * span(t_r, ds + DAY_US) / max(sampled_after, 1e-9)
    return np.concatenate([before, after])


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

    Works through CHUNK_INSTANCES instances at a time: small arrays stay in cache and are
    reused by the allocator instead of page-faulting fresh 50 MB arrays."""
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
    for lo in range(0, fleet.frame.height, CHUNK_INSTANCES):
        hi = min(lo + CHUNK_INSTANCES, fleet.frame.height)
        mine = (boot_insts >= lo) & (boot_insts < hi)
        part_fleet, part_runs = fleet.slice(lo, hi), runs.on_instances(lo, hi)
        run_grid = assign_runs(part_runs, hi - lo, ds, step, 86_400 // step_seconds)
        values = sample_values(part_fleet, part_runs, run_grid, ds, step, rng)
        values["energy_mj"] = energy_counter_mj(part_fleet, part_runs, values["power_w"], ds, step,
                                                (boot_times[mine], boot_insts[mine] - lo), seed)
        parts.append(_assemble(part_fleet, part_runs, run_grid, values, day, ds, step, cluster))
    return pl.concat(parts, rechunk=False) if parts else pl.DataFrame(schema=RAW_SAMPLE_SCHEMA)


def _assemble(fleet: Fleet, runs: Runs, run_grid: np.ndarray, values: dict[str, np.ndarray],
              day: date, ds: int, step: int, cluster: str) -> pl.DataFrame:
    n_inst, n_steps = run_grid.shape
    labels = fleet.frame.select([pl.col(c).cast(t) for c, t in SAMPLE_LABEL_SCHEMA.items() if c != "hpc_job"])
    frame = labels.gather(pl.Series(np.repeat(np.arange(n_inst, dtype=np.uint32), n_steps)))
    jobs = pl.Series("hpc_job", [None, *runs.job_id], dtype=pl.String).gather(pl.Series(run_grid.ravel()))
    ts = pl.Series("ts", np.tile(ds + step * np.arange(n_steps, dtype=np.int64), n_inst)).cast(pl.Datetime("us"))
    mig = not fleet.whole.all()
    gauges = [pl.Series(name, v.ravel(), nan_to_null=mig and name in DEVICE_ONLY) for name, v in values.items()]
    workload = [pl.lit(None, pl.String).alias(c) for c in ("pod", "namespace", "container")]
    frame = frame.with_columns(pl.lit(cluster, pl.String).alias("cluster"), pl.lit(day, pl.Date).alias("day"),
                               ts, jobs, *gauges, *workload, pl.lit("{}", pl.String).alias("extra_labels"))
    return frame.select(list(RAW_SAMPLE_SCHEMA))
