"""Monthly marts: per-job usage, per-department and per-cluster card-hours."""


import polars as pl
from dagster import AssetDep, AssetExecutionContext, MaterializeResult, asset

from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.fct_job_usage import fct_job_usage
from transforms.mart_cluster_monthly import capacity_gpu_hours, mart_cluster_monthly
from transforms.mart_department_monthly import mart_department_monthly
from warehouse import read_frame, replace_partition

JOB_USAGE_KEY = ["marts", "fct_job_usage"]
DEPARTMENT_KEY = ["marts", "mart_department_monthly"]
CLUSTER_KEY = ["marts", "mart_cluster_monthly"]


@asset(
    key=JOB_USAGE_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["staging", "stg_slurm__jobs"]), AssetDep(["staging", "stg_dcgm__gpu_hourly"])],
    description="One row per job run: GPU-hours inside the month, utilization, idle, energy, queue time.",
)
def fct_job_usage_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    config = cardhours.config
    inventory = config.inventory_frame()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in config.clusters:
            jobs = read_frame(conn, "SELECT * EXCLUDE (month) FROM staging.stg_slurm__jobs WHERE month = ? AND cluster = ?", [start.date(), cluster.name])
            hourly = read_frame(
                conn,
                "SELECT * EXCLUDE (day) FROM staging.stg_dcgm__gpu_hourly WHERE cluster = ? AND day >= ? AND day < ?",
                [cluster.name, start.date(), end.date()],
            )
            frames.append(
                fct_job_usage(
                    jobs=jobs,
                    hourly=hourly,
                    accounts=config.accounts_frame(),
                    gpu_models=inventory.select("cluster", "hostname", "gpu_model").unique(),
                    period_start=start,
                    period_end=end,
                    step_seconds=cluster.sample_step_seconds,
                )
            )
        usage = pl.concat(frames)
        rows = replace_partition(conn, "marts.fct_job_usage", usage, {"month": start.date()})
    no_samples = usage.filter(pl.col("start_time").is_not_null() & (pl.col("n_samples").fill_null(0) == 0)).height
    return MaterializeResult(
        metadata={"rows": rows, "gpu_hours": float(usage["gpu_hours"].sum() or 0), "jobs_without_samples": no_samples, "month": str(start.date())}
    )


@asset(
    key=DEPARTMENT_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY)],
    description="Per cluster, division and department: card-hours, utilization, idle waste, queue time.",
)
def mart_department_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    capacity = capacity_gpu_hours(cardhours.config.inventory_frame(), start, end)
    with cardhours.warehouse() as conn:
        usage = read_frame(conn, "SELECT * FROM marts.fct_job_usage WHERE month = ?", [start.date()])
        departments = mart_department_monthly(usage, period_start=start, capacity_gpu_hours=capacity)
        rows = replace_partition(conn, "marts.mart_department_monthly", departments, {"month": start.date()})
    return MaterializeResult(metadata={"rows": rows, "month": str(start.date())})


@asset(
    key=CLUSTER_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY)],
    description="Per cluster: capacity, allocated, active and idle GPU-hours, coverage, queue time.",
)
def mart_cluster_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    capacity = capacity_gpu_hours(cardhours.config.inventory_frame(), start, end)
    with cardhours.warehouse() as conn:
        usage = read_frame(conn, "SELECT * FROM marts.fct_job_usage WHERE month = ?", [start.date()])
        clusters = mart_cluster_monthly(usage, capacity, start.date())
        rows = replace_partition(conn, "marts.mart_cluster_monthly", clusters, {"month": start.date()})
    headline = clusters.row(0, named=True) if clusters.height == 1 else {}
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(start.date()),
            "allocation_ratio": float(headline.get("allocation_ratio") or 0.0),
            "utilization": float(headline.get("utilization") or 0.0),
        }
    )
