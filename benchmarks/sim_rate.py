"""Measure how fast the simulator writes per-sample DCGM metrics to Parquet.

    .venv/bin/python benchmarks/sim_rate.py                  # 1000 GPUs x 30 days x 15 s
    .venv/bin/python benchmarks/sim_rate.py --gpus 64 --days 2 --keep /tmp/sim

Builds a synthetic inventory (8 GPUs per node, H100/H200/A100 nodes) and allocations by a
simple random packing (each node runs rounds of 1/2/4/8-GPU jobs), then generates and
writes every day, overlapping the Parquet write of day N with the generation of day N+1
(`--serial` turns that off). Prints wall time, rows/s, peak RSS and output size.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from simulate.parquet_writer import write_day_parquet
from simulate.samples import generate_day

MODELS = {
    "H100": ("NVIDIA H100 80GB HBM3", 81559),
    "H200": ("NVIDIA H200", 143771),
    "A100": ("NVIDIA A100-SXM4-80GB", 81920),
}
KINDS = ["dense", "bursty", "starved", "hog", "tiny", "idle_tail", "idle"]
KIND_WEIGHTS = [0.45, 0.12, 0.1, 0.06, 0.05, 0.12, 0.1]


def build_inventory(n_gpus: int, rng: np.random.Generator) -> pl.DataFrame:
    rows = []
    for node in range(-(-n_gpus // 8)):
        model = str(rng.choice(list(MODELS), p=[0.5, 0.2, 0.3]))
        for gpu in range(min(8, n_gpus - 8 * node)):
            rows.append(
                {
                    "cluster": "bench",
                    "hostname": f"gpu{node:04d}",
                    "gpu": gpu,
                    "uuid": f"GPU-{rng.integers(1 << 62):016x}-{node:04x}-{gpu:04x}",
                    "pci_bus_id": f"00000000:{0x18 + 16 * gpu:02X}:00.0",
                    "device": f"nvidia{gpu}",
                    "model_name": MODELS[model][0],
                    "gpu_model": model,
                    "memory_mib": MODELS[model][1],
                    "gpu_i_id": None,
                    "gpu_i_profile": None,
                    "nvlink_domain": f"nvl{node // 4}",
                    "switch_group": f"sw{node // 16}",
                }
            )
    return pl.DataFrame(rows, schema_overrides={"gpu": pl.Int16, "gpu_i_id": pl.Int16})


def build_allocations(inventory: pl.DataFrame, start: datetime, days: int, rng: np.random.Generator) -> pl.DataFrame:
    """Per node: rounds of jobs; a round splits the node into 8/w groups of w GPUs."""
    rows, job = [], 1000
    end = start + timedelta(days=days)
    for host, gpus in inventory.group_by("hostname", maintain_order=True).agg("gpu").iter_rows():
        t = start - timedelta(hours=float(rng.uniform(0, 24)))
        while t < end:
            width = int(rng.choice([1, 2, 4, 8], p=[0.4, 0.2, 0.2, 0.2]))
            round_end = t
            for group in range(0, len(gpus), width):
                job += 1
                length = timedelta(seconds=float(rng.lognormal(np.log(6 * 3600), 0.9)))
                kind, seed = str(rng.choice(KINDS, p=KIND_WEIGHTS)), int(rng.integers(1 << 62))
                for gpu in gpus[group : group + width]:
                    rows.append((str(job), 0, host, gpu, None, t, t + length, kind, seed))
                round_end = max(round_end, t + length)
            t = round_end + timedelta(seconds=float(rng.exponential(1800)))
    schema = {
        "job_id_raw": pl.String,
        "run_index": pl.Int64,
        "hostname": pl.String,
        "gpu": pl.Int16,
        "gpu_i_id": pl.Int16,
        "start_time": pl.Datetime("us"),
        "end_time": pl.Datetime("us"),
        "kind": pl.String,
        "seed": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def run(n_gpus: int, days: int, step: int, out: Path, serial: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    first = date(2026, 3, 1)
    inventory = build_inventory(n_gpus, rng)
    allocations = build_allocations(inventory, datetime.combine(first, datetime.min.time()), days, rng)
    print(f"{inventory.height} instances, {allocations.height} allocations, step {step} s, {days} days")
    rows, gen_s, pending = 0, 0.0, None
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:
        for offset in range(days):
            day = first + timedelta(days=offset)
            t0 = time.perf_counter()
            frame = generate_day(inventory, allocations, day, step, seed, "bench")
            gen_s += time.perf_counter() - t0
            rows += frame.height
            if pending is not None:
                pending.result()
            pending: Future | None = pool.submit(write_day_parquet, frame, out, day)
            if serial:
                pending.result()
        pending.result()
    wall = time.perf_counter() - began
    size = sum(p.stat().st_size for p in (out / "metrics").rglob("*.parquet"))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"rows {rows:,}  wall {wall:.1f} s  rate {rows / wall / 1e6:.2f} M rows/s  "
        f"(generate {gen_s:.1f} s)  peak RSS {peak_mib:,.0f} MiB  output {size / 2**30:.2f} GiB "
        f"({size / rows:.2f} B/row)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--step", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--serial", action="store_true", help="do not overlap writing with generation")
    parser.add_argument("--keep", type=Path, help="write here and keep the output (default: a temp dir)")
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="sim_rate_"))
    try:
        run(args.gpus, args.days, args.step, out, args.serial, args.seed)
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
