"""Shared helpers for the simulated-sample tests: a small inventory, allocations, times of the day, steady samples."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

DAY = date(2026, 3, 2)
MIDNIGHT = datetime(2026, 3, 2)
MODELS = {
    "H100": ("NVIDIA H100 80GB HBM3", 81559),
    "H200": ("NVIDIA H200", 143771),
    "A100": ("NVIDIA A100-SXM4-80GB", 81920),
}
ALLOC_SCHEMA = {
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


def inventory(models: list[str], mig_gpus: int = 0) -> pl.DataFrame:
    """One node per model entry (4 GPUs each), plus `mig_gpus` A100s split into two 3g.40gb."""
    rows = []
    for node, model in enumerate(models):
        for gpu in range(4):
            rows.append(_instance(f"n{node:02d}", gpu, model, None))
    for gpu in range(mig_gpus):
        rows += [_instance("mig00", gpu, "A100", gi) for gi in (1, 2)]
    return pl.DataFrame(rows, schema_overrides={"gpu": pl.Int16, "gpu_i_id": pl.Int16, "memory_mib": pl.Int64})


def _instance(host: str, gpu: int, model: str, gi: int | None) -> dict[str, object]:
    name, memory = MODELS[model]
    return {
        "cluster": "t",
        "hostname": host,
        "gpu": gpu,
        "uuid": f"GPU-{host}-{gpu}",
        "pci_bus_id": f"00000000:{gpu:02X}:00.0",
        "device": f"nvidia{gpu}",
        "model_name": name,
        "gpu_model": model,
        "memory_mib": 40192 if gi else memory,
        "gpu_i_id": gi,
        "gpu_i_profile": "3g.40gb" if gi else None,
        "nvlink_domain": "d0",
        "switch_group": "s0",
    }


def allocations(rows: list[tuple]) -> pl.DataFrame:
    """Rows of (job, host, gpu, gpu_i_id, start, end, kind, seed); run_index 0."""
    return pl.DataFrame(
        [(j, 0, h, g, gi, s, e, k, sd) for j, h, g, gi, s, e, k, sd in rows], schema=ALLOC_SCHEMA, orient="row"
    )


def at(hours: float = 0.0, seconds: float = 0.0) -> datetime:
    return MIDNIGHT + timedelta(hours=hours, seconds=seconds)


def steady(frame: pl.DataFrame, alloc: pl.DataFrame, step: int) -> pl.DataFrame:
    """Samples inside a job after its CUDA-init sample, with the job's kind."""
    return frame.join(
        alloc.select("job_id_raw", "hostname", "gpu", "start_time", "kind"),
        left_on=["hpc_job", "hostname", "gpu"],
        right_on=["job_id_raw", "hostname", "gpu"],
    ).filter(pl.col("ts") >= pl.col("start_time") + timedelta(seconds=step))
