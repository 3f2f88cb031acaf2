"""The nine DCGM gauge metrics of one day per (instance, step): levels per run, noise per sample."""

from __future__ import annotations

import numpy as np

from simulate import shapes
from simulate.fleet import US, Fleet, Runs, steps_from

RATIO_FIELDS = {
    "gr_engine_active": "gr_engine",
    "sm_active": "sm_active",
    "sm_occupancy": "sm_occupancy",
    "tensor_active": "tensor",
    "dram_active": "dram",
}


def _level_table(fleet: Fleet, runs: Runs) -> dict[str, np.ndarray]:
    """Per-sample means and noise by row: [idle of each instance | each run | each run's tail]."""
    n_inst, n_runs = fleet.frame.height, runs.inst.size
    tail = shapes.SHAPES[shapes.TAIL_SHAPE]
    idle_index = shapes.SHAPE_NAMES.index("idle")

    def stack(field: str, run_scale: np.ndarray | float = 1.0) -> np.ndarray:
        per_shape = shapes.shape_param(field)
        parts = [
            np.full(n_inst, per_shape[idle_index]),
            per_shape[runs.shape] * run_scale,
            np.full(n_runs, getattr(tail, field)),
        ]
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


def sample_values(
    fleet: Fleet, runs: Runs, run_grid: np.ndarray, ds: int, step: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
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
    power = np.clip(power, 0.0, fleet.limit_w[:, None].astype(np.float32))
    out["power_w"] = _quantize(power, 1e3)
    mig = ~fleet.whole
    if mig.any():  # dcgm-exporter repeats the whole GPU's power on its instances, has no instance GPU_UTIL
        out["power_w"][mig] = _quantize(mig_gpu_power(fleet, power), 1e3)[mig]
        out["gpu_util"][mig] = np.nan
    return out


def mig_gpu_power(fleet: Fleet, power: np.ndarray) -> np.ndarray:
    """Per (row, step): its GPU's power, idle + the instances' (power - idle) x share, clipped to the limit."""
    starts = fleet.gpu_starts()
    above_idle = fleet.share[:, None] * (power.astype(np.float64) - fleet.idle_w[:, None])
    gpu_w = fleet.idle_w[starts, None] + np.add.reduceat(above_idle, starts, axis=0)
    return np.clip(gpu_w, 0.0, fleet.limit_w[starts, None])[fleet.gpu]


def _gpu_util(
    table: dict[str, np.ndarray],
    row: np.ndarray,
    run_grid: np.ndarray,
    runs: Runs,
    ds: int,
    step: int,
    z: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
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
    util[saw] = shapes.sawtooth_util(
        seconds, shapes.sawtooth_period(seed), shapes.sawtooth_phase(seed), table["util"][row[saw]], z[saw], u[0], u[1]
    )
    return util
