"""Expectation suites for the staged Kubernetes pods and jobs (as the staged Slurm jobs suite).

Pods (``staging.stg_kube__pods``): one row per (cluster, namespace, pod, uid), phases in
Kubernetes' set, created <= scheduled <= start <= end where both are known, GPUs > 0 and at
most the GPUs of the pod's node (``node_gpus`` from the inventory; not checked for a node the
inventory does not list), department never null. Jobs (``staging.stg_kube__jobs``): one row
per (cluster, job_id), states in the staging's set, submit <= start <= end, GPUs > 0 and at
most n_nodes x the cluster's largest node (jobs not placed yet: not checked), department never
null.
"""

from __future__ import annotations

from itertools import pairwise

import great_expectations as gx
import great_expectations.expectations as gxe
import polars as pl

from pipelines.checks.suites import GPU_CAPACITY_SLACK, suite_from_schema

POD_PHASES: tuple[str, ...] = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
KUBE_JOB_STATES: tuple[str, ...] = ("PENDING", "RUNNING", "COMPLETED", "FAILED")
POD_KEY: tuple[str, ...] = ("cluster", "namespace", "pod", "pod_uid")
POD_TIMES: tuple[str, ...] = ("created_time", "scheduled_time", "start_time", "end_time")
PODS_CHECK_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "pod": pl.String(),
    "pod_uid": pl.String(),
    "node": pl.String(),
    "phase": pl.String(),
    "department": pl.String(),
    **{column: pl.Datetime("us") for column in POD_TIMES},
    "gpus": pl.Float64(),
    "gpu_capacity": pl.Float64(),
}
JOBS_CHECK_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "state": pl.String(),
    "department": pl.String(),
    "submit_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "gpus": pl.Float64(),
    "n_nodes": pl.Int32(),
    "gpu_capacity": pl.Float64(),
}


def node_gpus(inventory: pl.DataFrame) -> pl.DataFrame:
    """Per (cluster, node): its GPUs (MIG instances as fractions)."""
    return (
        inventory.group_by("cluster", "hostname")
        .agg(pl.col("gpu_fraction").sum().alias("node_gpus"))
        .rename({"hostname": "node"})
    )


def staged_pods_frame(pods: pl.DataFrame, inventory: pl.DataFrame) -> pl.DataFrame:
    """The checked pod columns and ``gpu_capacity`` = the node's GPUs (null for an unlisted node)."""
    return (
        pods.join(node_gpus(inventory), on=["cluster", "node"], how="left")
        .with_columns(gpu_capacity=pl.col("node_gpus") + GPU_CAPACITY_SLACK)
        .select(list(PODS_CHECK_SCHEMA))
        .cast(PODS_CHECK_SCHEMA)
    )


def staged_kube_jobs_frame(jobs: pl.DataFrame, max_node_gpus: pl.DataFrame) -> pl.DataFrame:
    """The checked job columns and ``gpu_capacity`` = n_nodes x the cluster's largest node (null
    for a job none of whose pods was placed on a node: not checked)."""
    return (
        jobs.join(max_node_gpus.select("cluster", "max_node_gpus"), on="cluster", how="left")
        .with_columns(
            gpu_capacity=pl.when(pl.col("n_nodes") > 0).then(
                pl.col("n_nodes") * pl.col("max_node_gpus") + GPU_CAPACITY_SLACK
            )
        )
        .select(list(JOBS_CHECK_SCHEMA))
        .cast(JOBS_CHECK_SCHEMA)
    )


def _not_before(later: str, earlier: str) -> gxe.Expectation:
    return gxe.ExpectColumnPairValuesAToBeGreaterThanB(
        column_A=later, column_B=earlier, or_equal=True, ignore_row_if="either_value_is_missing"
    )


def _gpus() -> list[gxe.Expectation]:
    return [
        gxe.ExpectColumnValuesToBeBetween(column="gpus", min_value=0, strict_min=True, mostly=1.0),
        _not_before("gpu_capacity", "gpus"),
    ]


def staged_pods_suite() -> gx.ExpectationSuite:
    extra = [
        gxe.ExpectCompoundColumnsToBeUnique(column_list=list(POD_KEY), ignore_row_if="never", mostly=1.0),
        gxe.ExpectColumnValuesToBeInSet(column="phase", value_set=list(POD_PHASES), mostly=1.0),
        *(_not_before(later, earlier) for earlier, later in pairwise(POD_TIMES)),
        _not_before("end_time", "created_time"),
        _not_before("start_time", "created_time"),
        *_gpus(),
    ]
    return suite_from_schema(
        "staging.stg_kube__pods",
        PODS_CHECK_SCHEMA,
        non_null=("cluster", "namespace", "pod", "gpus", "department"),
        extra=extra,
    )


def staged_kube_jobs_suite() -> gx.ExpectationSuite:
    extra = [
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["cluster", "job_id"], ignore_row_if="never", mostly=1.0),
        gxe.ExpectColumnValuesToBeInSet(column="state", value_set=list(KUBE_JOB_STATES), mostly=1.0),
        _not_before("start_time", "submit_time"),
        _not_before("end_time", "start_time"),
        *_gpus(),
    ]
    return suite_from_schema(
        "staging.stg_kube__jobs",
        JOBS_CHECK_SCHEMA,
        non_null=("cluster", "job_id", "state", "gpus", "department"),
        extra=extra,
    )
