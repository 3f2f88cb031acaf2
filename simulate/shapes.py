"""Per-kind workload shapes for the simulated DCGM samples, fitted to a real H200 trace.

The numbers below come from `/work/shared/data/h200-trace` (one H200, 700 W limit,
143771 MiB, NVML + GPM read at 1 Hz while one job of each kind ran). For every job the
"steady state" is the job's samples after its CUDA-init phase (memory still at the
driver baseline) and after the first, partial, active second, minus its last sample;
idle is the no-job samples at least 3 s after a job ended (clocks settled).
`tests/unit/test_sim_samples_trace.py` recomputes these means from the trace and checks that
the simulator reproduces them; power and memory are stored as fractions of the device
limit / size so they scale to H100 (700 W, 80 GB), H200 and A100 (400 W).

Everything here is vectorized numpy: no loop per sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRACE_POWER_LIMIT_W = 700.0
TRACE_MEMORY_MIB = 143771.0

POWER_LIMIT_W: dict[str, float] = {"H100": 700.0, "H200": 700.0, "A100": 400.0}

IDLE_POWER_FRAC = 80.87 / TRACE_POWER_LIMIT_W  # no CUDA context, clocks down
BASELINE_FB_FRAC = 615.06 / TRACE_MEMORY_MIB  # driver context, always resident
INIT_SECONDS = 5.0  # process start + CUDA init: GPU held, memory at baseline, no activity

UTIL_LEVEL, UTIL_SPARSE, UTIL_SAWTOOTH = 0, 1, 2


@dataclass(frozen=True)
class KindShape:
    """Steady-state means (ratios 0-1, gpu_util %) and noise of one workload kind."""

    gpu_util: float
    gr_engine: float
    sm_active: float
    sm_occupancy: float
    tensor: float
    dram: float
    power_frac: float  # mean power / power limit
    power_sd_frac: float  # per-sample power sd / power limit
    fb_frac: float  # memory the process holds above the baseline / device memory
    rel_sd: float  # per-sample relative sd of the profiling ratios (SM_ACTIVE in the trace)
    util_sd: float  # per-sample sd of GPU_UTIL in UTIL_LEVEL mode (points)
    job_spread: float  # half-width of the per-job activity factor (1 +- spread), a design choice
    util_mode: int = UTIL_LEVEL


# GPU_UTIL of `bursty`: mostly 0, sometimes 1..6 (the busy bit's window catches a burst).
BURST_UTIL_MAX = 6
# GPU_UTIL of `starved`: a ~3 s duty cycle (autocorrelation peak at lag 3 in the trace):
# two thirds of the period read ~16 %, the last third reads 0, sometimes 1..9.
SAWTOOTH_PERIOD_S = 3.0
SAWTOOTH_PERIOD_JITTER = 0.02  # per job, so coarse sampling does not alias to one phase
SAWTOOTH_DUTY = 2.0 / 3.0
SAWTOOTH_HIGH = 15.95
SAWTOOTH_HIGH_SD = 0.2
SAWTOOTH_LOW_MEAN = 2.0
SAWTOOTH_LOW_MAX = 9
MEMORY_SPREAD = 0.2  # per-job memory factor 1 +- this (not in the trace: one job per kind)
GPU_JITTER = 0.01  # per-GPU activity jitter inside one multi-GPU job

_W, _MIB = TRACE_POWER_LIMIT_W, TRACE_MEMORY_MIB
SHAPES: dict[str, KindShape] = {
    "idle": KindShape(
        gpu_util=0.0,
        gr_engine=0.0,
        sm_active=0.0,
        sm_occupancy=0.0,
        tensor=0.0,
        dram=0.0,
        power_frac=IDLE_POWER_FRAC,
        power_sd_frac=0.15 / _W,
        fb_frac=0.0,
        rel_sd=0.0,
        util_sd=0.0,
        job_spread=0.0,
    ),
    "dense": KindShape(
        gpu_util=99.42,
        gr_engine=0.99388,
        sm_active=0.95937,
        sm_occupancy=0.14178,
        tensor=0.93098,
        dram=0.17396,
        power_frac=690.44 / _W,
        power_sd_frac=1.137 / _W,
        fb_frac=1138.8 / _MIB,
        rel_sd=0.0032,
        util_sd=0.50,
        job_spread=0.02,
    ),
    "hog": KindShape(
        gpu_util=0.0,
        gr_engine=0.00006,
        sm_active=0.0,
        sm_occupancy=0.0,
        tensor=0.0,
        dram=0.0000086,
        power_frac=125.86 / _W,
        power_sd_frac=0.082 / _W,
        fb_frac=57840.8 / _MIB,
        rel_sd=0.0,
        util_sd=0.0,
        job_spread=0.0,
    ),
    "bursty": KindShape(
        gpu_util=1.034,
        gr_engine=0.14735,
        sm_active=0.11373,
        sm_occupancy=0.016629,
        tensor=0.10841,
        dram=0.017552,
        power_frac=227.92 / _W,
        power_sd_frac=3.761 / _W,
        fb_frac=722.8 / _MIB,
        rel_sd=0.0114,
        util_sd=0.0,
        job_spread=0.25,
        util_mode=UTIL_SPARSE,
    ),
    # gpu_util is the trace's mean; the sawtooth draws from SAWTOOTH_* (its mean is ~11.3).
    "starved": KindShape(
        gpu_util=11.62,
        gr_engine=0.11701,
        sm_active=0.11328,
        sm_occupancy=0.014160,
        tensor=0.0,
        dram=0.0032572,
        power_frac=185.93 / _W,
        power_sd_frac=3.551 / _W,
        fb_frac=818.8 / _MIB,
        rel_sd=0.0602,
        util_sd=0.0,
        job_spread=0.2,
        util_mode=UTIL_SAWTOOTH,
    ),
    "tiny": KindShape(
        gpu_util=99.48,
        gr_engine=0.99238,
        sm_active=0.0075074,
        sm_occupancy=0.00012,
        tensor=0.0,
        dram=0.0,
        power_frac=125.96 / _W,
        power_sd_frac=0.105 / _W,
        fb_frac=526.8 / _MIB,
        rel_sd=0.0034,
        util_sd=0.51,
        job_spread=0.01,
    ),
}

SHAPE_NAMES: tuple[str, ...] = tuple(SHAPES)
# Allocation kinds -> shape while running. `idle_tail` runs dense, then (its tail) holds its
# memory and context doing nothing: the hog's activity and power. `idle` runs nothing.
ALLOCATION_KINDS: tuple[str, ...] = ("dense", "bursty", "starved", "hog", "tiny", "idle_tail", "idle")
RUN_SHAPE: dict[str, str] = {kind: kind for kind in SHAPES} | {"idle_tail": "dense"}
TAIL_SHAPE = "hog"
TAIL_MIN_S, TAIL_MAX_S = 2 * 3600.0, 6 * 3600.0
TAIL_MAX_FRACTION = 0.5  # a short idle_tail job spends at most half its run idle


def shape_param(field: str) -> np.ndarray:
    """One KindShape field for every shape, indexed like SHAPE_NAMES."""
    return np.array([getattr(SHAPES[name], field) for name in SHAPE_NAMES], dtype=np.float64)


def run_shape_index(kinds: list[str]) -> np.ndarray:
    """Per allocation kind, the index (into SHAPE_NAMES) of the shape it runs."""
    unknown = set(kinds) - set(ALLOCATION_KINDS)
    if unknown:
        raise ValueError(f"unknown allocation kinds {sorted(unknown)}; known: {ALLOCATION_KINDS}")
    lookup = {kind: SHAPE_NAMES.index(RUN_SHAPE[kind]) for kind in ALLOCATION_KINDS}
    return np.array([lookup[kind] for kind in kinds], dtype=np.int64)


def splitmix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic)."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def as_u64(values: np.ndarray | int) -> np.ndarray:
    """Integers (signed or not) as uint64 bit patterns, for hashing."""
    array = np.asarray(values)
    return array.astype(np.int64).view(np.uint64) if array.dtype != np.uint64 else array


def hash_unit(keys: np.ndarray | int, stream: int) -> np.ndarray:
    """A deterministic uniform [0, 1) per key and stream (independent streams per purpose)."""
    mixed = splitmix64(splitmix64(as_u64(keys)) ^ np.uint64(stream))
    return (mixed >> np.uint64(11)).astype(np.float64) * 2.0**-53


def activity_factor(job_seed: np.ndarray, gpu_key: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """Per allocation: the job's level around the kind mean, shared by its GPUs, plus a
    small per-GPU jitter. Symmetric, so the mean over many jobs is the kind mean."""
    job = 2.0 * hash_unit(job_seed, 1) - 1.0
    gpu = 2.0 * hash_unit(as_u64(job_seed) ^ gpu_key, 2) - 1.0
    return 1.0 + spread * job + np.where(spread > 0.0, GPU_JITTER * gpu, 0.0)


def memory_factor(job_seed: np.ndarray) -> np.ndarray:
    """Per allocation: how much memory this job holds relative to its kind's mean."""
    return 1.0 + MEMORY_SPREAD * (2.0 * hash_unit(job_seed, 3) - 1.0)


def tail_seconds(job_seed: np.ndarray, duration_s: np.ndarray) -> np.ndarray:
    """Length of an idle_tail job's idle tail: 2-6 h, at most half of a short run."""
    wanted = TAIL_MIN_S + (TAIL_MAX_S - TAIL_MIN_S) * hash_unit(job_seed, 4)
    return np.minimum(wanted, TAIL_MAX_FRACTION * duration_s)


def sawtooth_period(job_seed: np.ndarray) -> np.ndarray:
    """Per job: the starved duty-cycle period in seconds, jittered around the trace's."""
    return SAWTOOTH_PERIOD_S * (1.0 + SAWTOOTH_PERIOD_JITTER * (2.0 * hash_unit(job_seed, 5) - 1.0))


def sawtooth_phase(job_seed: np.ndarray) -> np.ndarray:
    """Per job: the duty-cycle phase at the job's start, in [0, 1)."""
    return hash_unit(job_seed, 6)


def ratio_values(mean: np.ndarray, rel_sd: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A profiling ratio: mean with relative gaussian noise, clipped to [0, 1]."""
    return np.clip(mean * (1.0 + rel_sd * z), 0.0, 1.0)


def level_util(mean: np.ndarray, sd: np.ndarray, z: np.ndarray) -> np.ndarray:
    """GPU_UTIL as NVML reports it: an integer percent."""
    return np.clip(np.rint(mean + sd * z), 0.0, 100.0)


def sparse_util(mean: np.ndarray, max_value: int, u_gate: np.ndarray, u_value: np.ndarray) -> np.ndarray:
    """Mostly 0, otherwise uniform on 1..max_value, with the given mean."""
    prob = np.clip(mean / ((1.0 + max_value) / 2.0), 0.0, 1.0)
    value = 1.0 + np.floor(u_value * max_value)
    return np.where(u_gate < prob, value, 0.0)


def sawtooth_util(
    seconds_since_start: np.ndarray,
    period: np.ndarray,
    phase: np.ndarray,
    level: np.ndarray,
    z: np.ndarray,
    u_gate: np.ndarray,
    u_value: np.ndarray,
) -> np.ndarray:
    """Starved GPU_UTIL: high for SAWTOOTH_DUTY of each period, then mostly 0.

    `level` scales the high part (the job's activity factor x SAWTOOTH_HIGH)."""
    cycle = np.mod(seconds_since_start / period + phase, 1.0)
    high = np.clip(np.rint(level + SAWTOOTH_HIGH_SD * z), 0.0, 100.0)
    low = sparse_util(np.full_like(level, SAWTOOTH_LOW_MEAN), SAWTOOTH_LOW_MAX, u_gate, u_value)
    return np.where(cycle < SAWTOOTH_DUTY, high, low)


def power_limit_w(gpu_model: str) -> float:
    """The board power limit the simulator assumes for a rate-key model."""
    try:
        return POWER_LIMIT_W[gpu_model]
    except KeyError:
        raise ValueError(f"unknown gpu_model {gpu_model!r}; known: {sorted(POWER_LIMIT_W)}") from None
