"""The DCGM energy counter: closed-form at each day start, following sampled power within the day,
reset by the simulated reboots."""

from __future__ import annotations

from datetime import date

import numpy as np

from simulate import shapes
from simulate.fleet import DAY_US, US, Fleet, Runs, steps_from

COUNTER_EPOCH = date(2020, 1, 1)  # energy counters integrate from here (plus a per-GPU base)
COUNTER_EPOCH_US = (COUNTER_EPOCH - date(1970, 1, 1)).days * DAY_US
REBOOT_PERIOD_US = 30 * DAY_US  # one GPU of the fleet reboots once per period: any 30 days hold one


def reboots(fleet: Fleet, seed: int, until_us: int) -> tuple[np.ndarray, np.ndarray]:
    """(time_us, instance) of every simulated reboot before until_us, oldest first.

    Picked among whole GPUs only, as before MIG GPUs had a counter, so whole GPUs' counters
    stay as they were; `energy_counter_mj` resets a MIG GPU too when handed a reboot of one."""
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
    """Per GPU (rows `fleet.gpu_starts()`): the closed-form energy over [a_us, b_us) (arrays per GPU,
    or scalars). A MIG GPU adds each instance's runs above idle times the instance's share.

    Ignores the seconds of CUDA init and clipping at the power limit; the counter scaling absorbs that."""
    starts = fleet.gpu_starts()
    a_us, b_us = np.broadcast_to(a_us, starts.shape), np.broadcast_to(b_us, starts.shape)
    run_gpu = fleet.gpu[runs.inst]
    a, b = a_us[run_gpu], b_us[run_gpu]

    def overlap_s(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.maximum(0, np.minimum(hi, b) - np.maximum(lo, a)) / US

    idle_w = fleet.idle_w[runs.inst]
    extra = (
        overlap_s(runs.start_us, runs.tail_us) * (runs.run_w - idle_w)
        + overlap_s(runs.tail_us, runs.end_us) * (runs.tail_w - idle_w)
    ) * fleet.share[runs.inst]
    per_gpu = fleet.idle_w[starts] * (b_us - a_us) / US + np.bincount(run_gpu, extra, minlength=starts.size)
    return 1000.0 * per_gpu


def energy_counter_mj(
    fleet: Fleet, runs: Runs, power_w: np.ndarray, ds: int, step: int, boots: tuple[np.ndarray, np.ndarray], seed: int
) -> np.ndarray:
    """TOTAL_ENERGY_CONSUMPTION per (instance, step): integer mJ since the GPU's boot, the
    GPU's counter repeated on each of its MIG instances (`power_w` holds the GPU's power there).

    `boots` are (time_us, instance) of the reboots before the day's end (`reboots`); a reboot
    resets the instance's whole GPU. At day start the counter is closed-form (base + expected
    energy since the last boot), so any day can be generated alone; within the day it follows
    the sampled power, scaled so the day adds exactly its closed-form energy: monotonic, and
    continuous across days."""
    starts = fleet.gpu_starts()
    times, gpus = boots[0], fleet.gpu[boots[1]]
    before = times <= ds
    last_boot = np.full(starts.size, COUNTER_EPOCH_US, dtype=np.int64)
    np.maximum.at(last_boot, gpus[before], times[before])
    base = np.floor(shapes.hash_unit(fleet.key[starts] ^ shapes.as_u64(seed), 10) * 2e11)  # energy before the epoch
    start = np.where(last_boot == COUNTER_EPOCH_US, base, 0.0) + expected_energy_mj(fleet, runs, last_boot, ds)
    inc = power_w[starts] * (step / US * 1000.0)
    done = np.cumsum(inc, axis=1) - inc  # sampled energy before each sample
    scale = expected_energy_mj(fleet, runs, ds, ds + DAY_US) / np.maximum(done[:, -1] + inc[:, -1], 1e-9)
    counter = start[:, None] + done * scale[:, None]
    for when, gpu in zip(times[~before].tolist(), gpus[~before].tolist(), strict=True):
        counter[gpu] = _rebooted_row(fleet, runs, gpu, done[gpu], inc[gpu], start[gpu], when, ds, step)
    return np.floor(counter)[fleet.gpu]


def _rebooted_row(
    fleet: Fleet, runs: Runs, gpu: int, done: np.ndarray, inc: np.ndarray, start: float, when: int, ds: int, step: int
) -> np.ndarray:
    """One GPU's counter on the day it reboots at `when` (ds < when < ds + 1 day): back to ~0."""
    k_r = int(steps_from(np.int64(when), ds, step))  # first sample at or after the reboot (>= 1)
    t_r = ds + k_r * step

    def span(a: int, b: int) -> float:
        return float(expected_energy_mj(fleet, runs, a, b)[gpu])

    before = start + done[:k_r] * span(ds, when) / max(float(done[k_r - 1] + inc[k_r - 1]), 1e-9)
    since = done[k_r:] - done[min(k_r, done.size - 1)]
    sampled_after = float(since[-1] + inc[-1]) if since.size else 1.0
    after = span(when, t_r) + since * span(t_r, ds + DAY_US) / max(sampled_after, 1e-9)
    return np.concatenate([before, after])
