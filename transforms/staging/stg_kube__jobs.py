"""staging.stg_kube__jobs: Kubernetes GPU pods grouped into jobs, columns aligned with
stg_slurm__jobs where the meaning is the same (so the two can be unioned, scheduler
``kubernetes``).

- A job is a bare pod, a replica pod (owner ReplicaSet, StatefulSet, DaemonSet,
  ReplicationController: each replica counts alone and carries ``deployment_name`` for a
  monthly roll-up), or the owner (Job, PyTorchJob, PodGroup, RayCluster, ...) shared by
  its pods: ``job_id = namespace/owner_kind/owner_name``, else ``namespace/pod``.
- ``gpus``/``gpu_slots``/``gpu_seconds`` are summed over the job's pods; ``n_pods`` counts them.
- ``submit_time`` = first pod created, ``start_time`` = first pod started, ``end_time`` =
  last pod end (null while any pod is open); ``queue_seconds`` = first created -> last pod
  scheduled (a gang waits for its last member; null while a pod is still unscheduled).
- ``state``: PENDING when no pod started, RUNNING while a pod is open, FAILED when a pod
  failed, else COMPLETED (pods that were deleted while running count as completed).
- ``department``: the pods' department (the first pod's when they disagree, flagged in
  ``department_conflict``).
"""

from __future__ import annotations

import polars as pl

from contracts.jobs import ALLOCATION, JOB_IDS, OWNER, QUEUE, TIMES

SCHEMA: dict[str, pl.DataType] = {
    **JOB_IDS,
    **OWNER,
    **QUEUE,
    "state": pl.String(),
    **TIMES,
    "is_open": pl.Boolean(),
    **ALLOCATION,
    "namespace": pl.String(),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "deployment_name": pl.String(),
    "department": pl.String(),
    "department_source": pl.String(),
    "department_conflict": pl.Boolean(),
    "queue_name": pl.String(),
    "queue_seconds": pl.Float64(),
    "gpu_seconds": pl.Float64(),
    "end_error_seconds": pl.Int64(),
    "n_pods": pl.Int32(),
}
PER_POD_OWNERS = ("ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController")
NO_OWNER = "<none>"


def job_key() -> pl.Expr:
    """``namespace/pod`` for bare and replica pods, else ``namespace/owner_kind/owner_name``."""
    per_pod = pl.col("owner_kind").is_null() | pl.col("owner_kind").is_in([NO_OWNER, *PER_POD_OWNERS])
    return (
        pl.when(per_pod)
        .then(pl.format("{}/{}", "namespace", "pod"))
        .otherwise(pl.format("{}/{}/{}", "namespace", "owner_kind", "owner_name"))
    )


def _state() -> pl.Expr:
    return (
        pl.when(pl.col("start_time").is_null().all())
        .then(pl.lit("PENDING"))
        .when(pl.col("is_open").any())
        .then(pl.lit("RUNNING"))
        .when((pl.col("phase") == "Failed").any())
        .then(pl.lit("FAILED"))
        .otherwise(pl.lit("COMPLETED"))
    )


def stg_kube__jobs(pods: pl.DataFrame) -> pl.DataFrame:
    """One row per job from stg_kube__pods rows."""
    keyed = pods.with_columns(
        job_id=job_key(),
        per_pod=pl.col("owner_kind").is_null() | pl.col("owner_kind").is_in([NO_OWNER, *PER_POD_OWNERS]),
    )
    jobs = (
        keyed.sort("created_time", "pod")
        .group_by("cluster", "job_id", maintain_order=True)
        .agg(
            job_name=pl.when(pl.col("per_pod").first())
            .then(pl.col("pod").first())
            .otherwise(pl.col("owner_name").first()),
            qos=pl.col("priority_class").first(),
            state=_state(),
            submit_time=pl.col("created_time").min(),
            start_time=pl.col("start_time").min(),
            end_time=pl.when(pl.col("is_open").any()).then(None).otherwise(pl.col("end_time").max()),
            is_open=pl.col("is_open").any(),
            gpus=pl.col("gpus").sum(),
            gpu_slots=pl.col("gpu_slots").sum(),
            gpu_type=pl.col("gpu_type").unique().sort().str.join(","),
            is_mig=pl.col("is_mig").any(),
            hosts=pl.col("node").drop_nulls().unique().sort(),
            namespace=pl.col("namespace").first(),
            owner_kind=pl.col("owner_kind").first(),
            owner_name=pl.col("owner_name").first(),
            deployment_name=pl.col("deployment_name").first(),
            department=pl.col("department").first(),
            department_source=pl.col("department_source").first(),
            department_conflict=pl.col("department").n_unique() > 1,
            queue_name=pl.col("queue_name").drop_nulls().first(),
            queue_seconds=pl.when(pl.col("scheduled_time").is_null().any())
            .then(None)
            .otherwise((pl.col("scheduled_time").max() - pl.col("created_time").min()).dt.total_microseconds() / 1e6),
            gpu_seconds=pl.col("gpu_seconds").sum(),
            end_error_seconds=pl.col("end_error_seconds").max(),
            n_pods=pl.len(),
        )
    )
    return (
        jobs.with_columns(
            scheduler=pl.lit("kubernetes"),
            job_id_raw=pl.col("job_id"),
            user_name=pl.lit(None, pl.String),
            account=pl.col("namespace"),
            partition_name=pl.lit(None, pl.String),
            eligible_time=pl.col("submit_time"),
            n_nodes=pl.col("hosts").list.len(),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort("cluster", "job_id")
    )  # type: ignore[arg-type]
