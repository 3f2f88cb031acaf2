"""The Dagster code location (``dagster dev`` loads ``defs``; see ``[tool.dagster]`` in pyproject).

The config file comes from ``CARDHOURS_CONFIG`` when a run starts (an ``EnvVar``: read at
run time, not at import), or from ``build_definitions(path)`` when the CLI drives a run.
The monthly schedule reads ``[schedule]`` (timezone, hour) from the same file at each tick, and
the monthly review sensor the clusters and the lake.
"""

from __future__ import annotations

from dagster import Definitions, EnvVar

from pipelines.alerts import ingest_freshness, run_failure_alert
from pipelines.assets.archive import archive_index
from pipelines.assets.capacity_split import fct_gpu_capacity_split_asset
from pipelines.assets.chargeback import CHARGEBACK_ASSETS
from pipelines.assets.dcgm_downtime import stg_dcgm__gpu_dropout_asset
from pipelines.assets.dcgm_xid import stg_dcgm__gpu_xid_asset
from pipelines.assets.delivery import review_delivery
from pipelines.assets.downtime import stg_slurm__downtime_asset
from pipelines.assets.gate import month_landed
from pipelines.assets.ingest import raw_dcgm_samples, raw_slurm_sacct
from pipelines.assets.intermediate import int_gpu_minutes_attributed_asset
from pipelines.assets.inventory import int_gpu_inventory_observed_asset
from pipelines.assets.kube import raw_kube_series, stg_kube__jobs_asset, stg_kube__pods_asset
from pipelines.assets.kube_marts import mart_deployment_monthly_asset, mart_kube_queue_monthly_asset
from pipelines.assets.kube_nodes import stg_kube__node_capacity_asset, stg_kube__node_downtime_asset
from pipelines.assets.marts import (
    fct_gpu_hourly_asset,
    fct_job_usage_asset,
    mart_cluster_monthly_asset,
    mart_department_monthly_asset,
)
from pipelines.assets.notices import user_notices
from pipelines.assets.publish import publish_postgres
from pipelines.assets.reports import review_html
from pipelines.assets.review import fct_job_flags_asset, mart_user_monthly_asset
from pipelines.assets.slurm_nodes import raw_slurm_node_snapshots, stg_slurm__node_capacity_asset
from pipelines.assets.staging import (
    stg_dcgm__field_presence_asset,
    stg_dcgm__gpu_hour_sums_asset,
    stg_dcgm__gpu_hourly_asset,
    stg_dcgm__gpu_minutely_asset,
    stg_slurm__jobs_asset,
)
from pipelines.jobs import daily_ingest_job, daily_schedule, monthly_review_job
from pipelines.resources import CardhoursResource
from pipelines.review_sensor import monthly_review_sensor
from pipelines.schedules import monthly_review_schedule

ASSETS = [
    month_landed,
    raw_dcgm_samples,
    raw_slurm_sacct,
    stg_slurm__downtime_asset,
    raw_slurm_node_snapshots,
    stg_slurm__node_capacity_asset,
    stg_dcgm__gpu_hourly_asset,
    stg_dcgm__gpu_minutely_asset,
    stg_dcgm__gpu_hour_sums_asset,
    stg_dcgm__field_presence_asset,
    stg_dcgm__gpu_dropout_asset,
    stg_dcgm__gpu_xid_asset,
    stg_slurm__jobs_asset,
    raw_kube_series,
    stg_kube__pods_asset,
    stg_kube__jobs_asset,
    stg_kube__node_capacity_asset,
    stg_kube__node_downtime_asset,
    int_gpu_minutes_attributed_asset,
    int_gpu_inventory_observed_asset,
    fct_job_usage_asset,
    fct_gpu_hourly_asset,
    fct_gpu_capacity_split_asset,
    mart_department_monthly_asset,
    mart_cluster_monthly_asset,
    mart_deployment_monthly_asset,
    mart_kube_queue_monthly_asset,
    fct_job_flags_asset,
    mart_user_monthly_asset,
    review_html,
    *CHARGEBACK_ASSETS,
    archive_index,
    review_delivery,
    publish_postgres,
    user_notices,
]


def build_definitions(config_path: str | EnvVar, daily=daily_ingest_job) -> Definitions:
    """All assets, jobs, schedules and sensors, bound to one config file; ``daily`` is the daily job
    (pipelines/jobs.py ``daily_job``: which executor runs its steps)."""
    return Definitions(
        assets=ASSETS,
        jobs=[daily, monthly_review_job],
        schedules=[daily_schedule(daily), monthly_review_schedule],
        sensors=[run_failure_alert, ingest_freshness, monthly_review_sensor],
        resources={"cardhours": CardhoursResource(config_path=config_path)},
    )


defs = build_definitions(EnvVar("CARDHOURS_CONFIG"))
