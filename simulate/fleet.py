"""The simulated fleet and its runs as arrays: per-instance constants, per-run levels, and which
run holds each (instance, step) of a day."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from simulate import shapes
from simulate.hardware import mig_fraction

US = 1_000_000
DAY_US = 86_400 * US
_NO_END_US = np.iinfo(np.int64).max // 4  # a run still going when the window ends


@dataclass(frozen=True)
class Fleet:
    """The inventory sorted like the output, with per-instance constants."""

    frame: pl.DataFrame
    whole: np.ndarray  # bool: a whole GPU, not a MIG instance
    limit_w: np.ndarray
    memory_mib: np.ndarray
    idle_w: np.ndarray  # this GPU's idle power (a per-GPU jitter around the trace's; same on its instances)
    key: np.ndarray  # uint64 hash of uuid and instance id, stable across runs
    share: np.ndarray  # the instance's share of its GPU: 1 for a whole GPU, compute slices / 7 for MIG
    gpu: np.ndarray  # index of the physical GPU (hostname, gpu), 0.. in row order: instances are adjacent

    def slice(self, lo: int, hi: int) -> Fleet:
        gpu = self.gpu[lo:hi]
        return Fleet(
            frame=self.frame.slice(lo, hi - lo),
            whole=self.whole[lo:hi],
            limit_w=self.limit_w[lo:hi],
            memory_mib=self.memory_mib[lo:hi],
            idle_w=self.idle_w[lo:hi],
            key=self.key[lo:hi],
            share=self.share[lo:hi],
            gpu=gpu - gpu[0] if gpu.size else gpu,
        )

    def gpu_starts(self) -> np.ndarray:
        """The first row of each physical GPU."""
        return np.flatnonzero(np.diff(self.gpu, prepend=-1))


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
    gpu = frame.select(pl.struct("hostname", "gpu").rle_id()).to_series().to_numpy().astype(np.int64)
    first = np.flatnonzero(np.diff(gpu, prepend=-1))
    uuids = frame["uuid"].to_list()
    key = _hash_names([f"{u}/{g}" for u, g in zip(uuids, frame["gpu_i_id"].to_list(), strict=True)])
    gpu_key = _hash_names([f"{uuids[i]}/None" for i in first])[gpu]  # == key on a whole GPU
    jitter = 1.0 + 0.03 * (2.0 * shapes.hash_unit(gpu_key ^ shapes.as_u64(seed), 7) - 1.0)
    profiles = frame["gpu_i_profile"].to_list()
    share = np.array([1.0 if p is None else mig_fraction(p) for p in profiles])
    return Fleet(
        frame=frame,
        whole=frame["gpu_i_id"].is_null().to_numpy(),
        limit_w=limit,
        memory_mib=frame["memory_mib"].cast(pl.Float64).to_numpy(),
        idle_w=limit * shapes.IDLE_POWER_FRAC * jitter,
        key=key,
        share=share,
        gpu=gpu,
    )


def _hash_names(names: list[str]) -> np.ndarray:
    digests = [hashlib.blake2b(n.encode(), digest_size=8).digest() for n in names]
    return np.array([int.from_bytes(d, "little") for d in digests], dtype=np.uint64)


def _join_instances(allocations: pl.DataFrame, fleet: Fleet) -> pl.DataFrame:
    keys = {"gpu": pl.Int16, "gpu_i_id": pl.Int16}
    index = fleet.frame.select("hostname", "gpu", "gpu_i_id").cast(keys).with_row_index("inst")
    joined = allocations.cast(keys).join(
        index, on=["hostname", "gpu", "gpu_i_id"], how="left", nulls_equal=True, maintain_order="left"
    )
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
    return Runs(
        inst=inst,
        start_us=start,
        end_us=end,
        tail_us=tail,
        shape=shape,
        job_seed=job_seed,
        act=act,
        run_w=run_w,
        tail_w=tail_w,
        fb_mib=np.rint(fleet.memory_mib[inst] * held),
        job_id=joined["job_id_raw"].cast(pl.String).to_numpy().astype(object),
    )


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
