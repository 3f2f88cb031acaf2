"""DCGM downtime, daily: the GPUs whose series stopped while their host's other GPUs reported
(``staging.stg_dcgm__gpu_dropout``, downtime intervals; docs/marts.md)."""

from __future__ import annotations

import polars as pl

from config.cluster import ClusterConfig
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import RAW_DCGM_SAMPLES, STG_DCGM__GPU_DROPOUT
from transforms.staging.stg_dcgm__gpu_dropout import PRESENT_SQL, SCHEMA, stg_dcgm__gpu_dropout


def _dropout(step: Step, cluster: ClusterConfig, declared: pl.DataFrame) -> pl.DataFrame:
    present = step.sql(PRESENT_SQL, [cluster.name, step.day])
    return stg_dcgm__gpu_dropout(present, declared, cluster.name, step.start, step.end, cluster.sample_step_seconds)


@table_asset(
    STG_DCGM__GPU_DROPOUT,
    reads=[RAW_DCGM_SAMPLES],
    kinds=["polars"],
    description="Downtime intervals (DOWNTIME_INTERVAL) of GPUs with no DCGM sample while their host's other "
    "GPUs reported, for at least two scrapes; clipped to the day.",
)
def stg_dcgm__gpu_dropout_asset(step: Step) -> Built:
    declared = step.config.inventory_frame()
    parts = [_dropout(step, cluster, declared) for cluster in step.clusters]
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)
    seconds = (frame["end_ts"] - frame["start_ts"]).dt.total_seconds().sum() if frame.height else 0
    return Built(frame, metadata={"intervals": frame.height, "gpu_down_hours": round(float(seconds) / 3600, 3)})
