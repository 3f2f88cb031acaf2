"""Shared helpers for the fct_job_flags tests: a crafted usage row, profiles, thresholds and the transform call."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

from config.policy import FlagsConfig
from transforms.marts.fct_job_flags import fct_job_flags
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.job_activity_profile import SCHEMA as PROFILE_SCHEMA

MONTH = date(2024, 3, 1)
PERIOD_END = datetime(2024, 4, 1)
H100_MIB = 81559  # "NVIDIA H100 80GB HBM3" as nvidia-smi reports it
START = datetime(2024, 3, 10, 8)
INVENTORY_SCHEMA = {
    "cluster": pl.String,
    "hostname": pl.String,
    "gpu": pl.Int16,
    "gpu_i_profile": pl.String,
    "memory_mib": pl.Int64,
    "gpu_model": pl.String,
    "nvlink_domain": pl.String,
    "switch_group": pl.String,
}
# n1-n4: HGX H100 nodes (each its own NVLink domain), n1-n2 under leaf-1, n3-n4 under leaf-2.
INVENTORY = pl.DataFrame(
    [("c1", f"n{h}", g, None, H100_MIB, "H100", None, f"leaf-{(h + 1) // 2}") for h in (1, 2, 3, 4) for g in range(8)]
    + [("c1", "h200", 0, None, 143771, "H200", None, None), ("c1", "a40", 0, None, 40960, "A40", None, None)]
    + [
        ("c1", "m1", 0, profile, memory, "A100", None, None)
        for profile, memory in (("3g.40gb", 40960), ("4g.40gb", 40960), ("1g.10gb", 10240))
    ],
    schema=INVENTORY_SCHEMA,
    orient="row",
)
PRICES = {"H100": 2.0, "A100": 1.0}


def usage_row(job_id: str = "1", hours: float = 2.0, util: float | None = 0.6, **fields) -> dict:
    """A fct_job_usage run: 1 H100 on n1 for ``hours`` h with sm_active mean ``util``, GPU_UTIL
    and GR_ENGINE equal to it, 8 GiB of memory; derived hours follow the fields given."""
    gpus = fields.get("gpus", 1.0)
    gpu_hours = gpus * hours
    row = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": job_id,
        "job_id_raw": job_id,
        "job_name": "train",
        "user_name": "alice",
        "account": "physics",
        "department": "phys",
        "division": "sci",
        "partition_name": "gpu",
        "state": "COMPLETED",
        "start_time": START,
        "end_time": START + timedelta(hours=hours),
        "is_open": False,
        "gpus": gpus,
        "gpu_model": "H100",
        "hosts": "n1",
        "elapsed_seconds": int(hours * 3600),
        "gpu_hours": gpu_hours,
        "utilization": util,
        "utilization_signal": "sm_active" if util is not None else None,
        "mean_gpu_util": util,
        "mean_gr_engine_active": util,
        "mean_sm_active": util,
        "mean_tensor_active": 0.0,
        "peak_fb_used_mib": 8192.0,
        "mean_fb_used_mib": 8000.0,
        "n_samples": 100 if util is not None else 0,
        "month": MONTH,
    }
    row |= fields
    if row["utilization"] is not None:
        row["active_gpu_hours"] = row["gpu_hours"] * row["utilization"]
        row["idle_gpu_hours"] = row["gpu_hours"] - row["active_gpu_hours"]
        row["zero_util_gpu_hours"] = row["gpu_hours"] if row["utilization"] <= 0.01 else 0.0
    return row


def profile_rows(rows: list[dict], **per_job: dict) -> pl.DataFrame:
    """One int_job_activity_profiled row per usage row: steady_share 1, no tail, unless overridden."""
    out = []
    for row in rows:
        extra = per_job.get(f"j{row['job_id_raw']}", {})
        out.append(
            {
                "cluster": row["cluster"],
                "job_id_raw": row["job_id_raw"],
                "start_time": row["start_time"],
                "measured_hours": 2,
                "steady_share": 1.0,
                "tail_zero_hours": 0.0,
            }
            | extra
        )
    return pl.DataFrame(out, schema=PROFILE_SCHEMA)


def thresholds(**overrides) -> FlagsConfig:
    return FlagsConfig(**overrides)


def flags(
    rows: list[dict],
    profiles: dict | None = None,
    inventory: pl.DataFrame = INVENTORY,
    downtime: pl.DataFrame | None = None,
    **overrides,
) -> pl.DataFrame:
    usage = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    profile = profile_rows(rows, **(profiles or {}))
    return fct_job_flags(
        usage, profile, inventory, thresholds(**overrides), PRICES, "EUR", PERIOD_END, MONTH, downtime=downtime
    )


def reasons(rows: list[dict], job_id: str = "1", **kwargs) -> dict[str, str]:
    """reason -> severity of one job."""
    frame = flags(rows, **kwargs).filter(pl.col("job_id") == job_id)
    return dict(frame.select("reason", "severity").iter_rows())
