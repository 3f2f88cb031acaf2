"""The same Prometheus as one cluster config with Slurm and Kubernetes through the daily and
monthly Dagster jobs: pods as jobs in fct_job_usage, one department mart, one review with both
schedulers, queue and deployment marts against the truth (the site: conftest.py)."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance

from config.cluster import ClusterConfig
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.kube.queues import WAIT_BUCKETS
from simulate.kube.training import CLUSTER_QUEUE, VOLCANO_QUEUE
from simulate.run import SimulationResult
from tests.integration.kube.cases import DAYS, STEP, T0

pytestmark = [pytest.mark.integration, pytest.mark.slow]


MIXED_MONTH = "2026-03-01"


def _mixed_config(sim: SimulationResult, url: str) -> Path:
    """The simulator's config with the DCGM samples and kube-state-metrics read from Prometheus."""
    text = sim.config_path.read_text()
    text = re.sub(
        r"\[clusters\.metrics\]\n(?:[^\[\n][^\n]*\n)*",
        f'[clusters.metrics]\nsource = "prometheus"\nstep_seconds = {STEP}\n\n'
        f'[clusters.prometheus]\nurl = "{url}"\nscrape_interval_seconds = {STEP}\nstep_seconds = {STEP}\n\n',
        text,
    )
    text = text.replace('path = "kube_state.om"\n', "").replace('path = "cardhours.duckdb"', 'path = "mixed.duckdb"')
    text = text.replace('dir = "reports"', 'dir = "mixed_reports"')
    path = sim.config_path.with_name("mixed.toml")
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def mixed(sim: SimulationResult, cluster: ClusterConfig) -> dict:
    config_path = _mixed_config(sim, cluster.prometheus.url)
    definitions = build_definitions(str(config_path))
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            day = (T0 + timedelta(days=i)).date().isoformat()
            assert (
                definitions.resolve_job_def("daily_ingest")
                .execute_in_process(partition_key=day, instance=instance)
                .success
            )
        result = definitions.resolve_job_def("monthly_review").execute_in_process(
            partition_key=MIXED_MONTH,
            instance=instance,
            run_config={"ops": {GATE_STEP: {"config": {"accept_gaps": f"the site serves {DAYS} days of March"}}}},
        )
    assert result.success
    checks = {(tuple(e.asset_key.path), e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    conn = duckdb.connect(str(config_path.with_name("mixed.duckdb")), read_only=True)
    try:
        tables = {
            name: conn.sql(f"SELECT * FROM {name}").pl()
            for name in (
                "marts.fct_job_usage",
                "marts.mart_department_monthly",
                "marts.fct_gpu_hourly",
                "intermediate.int_gpu_minutes_attributed",
                "marts.mart_deployment_monthly",
                "marts.mart_kube_queue_monthly",
            )
        }
    finally:
        conn.close()
    review = (config_path.parent / "mixed_reports" / "2026-03" / "review.html").read_text()
    return {"checks": checks, "review": review, **tables}


def _seen_jobs(truth: pl.DataFrame) -> pl.DataFrame:
    """Per truth job key: pods, GPUs, card-seconds, wait (first created -> last scheduled), open or not."""
    return truth.group_by("job_key").agg(
        n_pods=pl.len(),
        gpus=pl.col("gpus").sum(),
        seconds=pl.col("gpu_seconds").sum(),
        wait=(pl.col("scheduled_time").max() - pl.col("created_time").min()).dt.total_seconds(),
        open=pl.col("end_time").is_null().any(),
        department=pl.col("department").first(),
        namespace=pl.col("namespace").first(),
        mig=pl.col("mig_profile").first(),
    )


def test_mixed_month_pods_are_jobs_in_fct_job_usage(mixed: dict, truth: pl.DataFrame) -> None:
    assert all(mixed["checks"].values()) and len(mixed["checks"]) >= 8, mixed["checks"]
    usage = mixed["marts.fct_job_usage"]
    kube = usage.filter(pl.col("scheduler") == "kubernetes")
    assert set(usage["scheduler"]) == {"slurm", "kubernetes"}
    expected = _seen_jobs(truth)
    joined = expected.join(kube, left_on="job_key", right_on="job_id", how="full", coalesce=True)
    assert joined.filter(pl.col("n_pods").is_null() | pl.col("scheduler").is_null()).is_empty()  # gangs once
    assert kube["job_id"].is_unique().all() and kube.height == expected.height
    closed = joined.filter(~pl.col("open"))
    off = closed.filter((pl.col("gpu_hours") * 3600 - pl.col("seconds")).abs() > STEP * pl.col("gpus") + 1e-6)
    assert closed.height > 20 and off.is_empty(), off.select("job_key", "seconds", "gpu_hours")
    waits = joined.filter(pl.col("wait").is_not_null())
    assert (waits["wait"] == waits["queue_seconds"]).all() and waits["queue_seconds"].max() > 600
    assert (joined["department"] == joined["department_right"]).all()
    sandbox = joined.filter(pl.col("namespace") == "sandbox")
    assert (
        sandbox.height > 0
        and (sandbox["department_right"] == "unmapped").all()
        and (sandbox["division"] == "unmapped").all()
    )
    mig = joined.filter(pl.col("mig").is_not_null())
    weight = mig["mig"].replace_strict({"1g.10gb": 1 / 7, "3g.40gb": 3 / 7}) * mig["n_pods"]
    assert mig.height > 0 and ((mig["gpus_right"] - weight).abs() < 1e-12).all()
    assert (mig["gpu_model"] == "A100 " + mig["mig"]).all()
    # DCGM samples found their pods (also on the exported_* nodes): closed pods fully sampled
    sampled = closed.filter(pl.col("seconds") > 20 * STEP * pl.col("gpus"))
    assert set(sampled["attribution_method"]) == {"pod_label"}
    assert sampled["hosts"].str.contains("kgpu-003|kgpu-004").any()
    assert (sampled["sample_coverage"] >= 0.9).all(), sampled.select("job_key", "n_samples", "expected_samples")


def test_mixed_month_one_set_of_marts_and_one_review_with_both_schedulers(mixed: dict) -> None:
    usage, departments = mixed["marts.fct_job_usage"], mixed["marts.mart_department_monthly"]
    per_department = usage.group_by("department").agg(pl.col("gpu_hours").sum())
    both = usage.group_by("department").agg(pl.col("scheduler").n_unique().alias("n"))
    assert both.filter(pl.col("n") == 2).height >= 2  # departments with Slurm jobs and pods, summed in one row
    joined = per_department.join(departments.filter(pl.col("department") != "(unallocated)"), on="department")
    assert joined.height == per_department.height
    assert ((joined["gpu_hours"] - joined["gpu_hours_right"]).abs() < 1e-6).all()
    hourly = mixed["marts.fct_gpu_hourly"]
    assert (hourly["allocated_seconds"] <= hourly["capacity_seconds"] + 1e-6).all()
    kube_basis = set(hourly.filter(pl.col("hostname").str.starts_with("k"))["allocation_basis"].drop_nulls())
    assert "pod_label" in kube_basis and kube_basis <= {"pod_label", "host_spread", "host_whole"}
    review = mixed["review"]
    section = review.split('id="schedulers"', 1)[1].split("</section>", 1)[0]
    assert all(name in section for name in ("slurm", "kubernetes", "all"))


def test_mixed_month_allocated_gpu_hours_equal_job_gpu_hours(mixed: dict) -> None:
    """fct_gpu_hourly allocates what fct_job_usage charges: Slurm exactly; Kubernetes (pod time
    no sample stands for placed on the pod's node) within one step per pod GPU, since a pod's
    labelled samples stand for whole steps (measured: 16482.2 of 16483.5 GPU-hours)."""
    usage, hourly = mixed["marts.fct_job_usage"], mixed["marts.fct_gpu_hourly"]
    on_pool = pl.col("hostname").str.starts_with("k")
    slurm = usage.filter(pl.col("scheduler") == "slurm")
    kube = usage.filter(pl.col("scheduler") == "kubernetes")
    assert hourly.filter(~on_pool)["allocated_seconds"].sum() / 3600 == pytest.approx(
        slurm["gpu_hours"].sum(), abs=1e-6
    )
    kube_allocated = hourly.filter(on_pool)["allocated_seconds"].sum() / 3600
    assert abs(kube_allocated - kube["gpu_hours"].sum()) <= kube["gpus"].sum() * STEP / 3600
    assert hourly["allocated_seconds"].sum() / 3600 == pytest.approx(usage["gpu_hours"].sum(), rel=1e-3)
    assert (hourly["allocated_seconds"] <= hourly["capacity_seconds"] + 1e-6).all()


def _bucket(seconds: float) -> int:
    """Index of the Kueue wait bucket (1, 2, 4, ... s) holding ``seconds``."""
    return 0 if seconds <= 1 else math.ceil(math.log2(seconds))


def test_mixed_month_queue_mart_against_the_truth(mixed: dict, truth: pl.DataFrame) -> None:
    queues = mixed["marts.mart_kube_queue_monthly"]
    kueue_jobs = (
        truth.filter(pl.col("scheduler") == "kueue")
        .group_by("job_key")
        .agg(
            wait=((pl.col("created_time").min() - pl.col("submit_time").min()).dt.total_seconds() - 1).cast(pl.Float64)
        )
    )
    training = queues.filter((pl.col("queue") == CLUSTER_QUEUE) & (pl.col("queue_kind") == "kueue")).row(0, named=True)
    assert training["admitted_workloads"] == kueue_jobs.height > 0
    assert training["admission_wait_mean_seconds"] == pytest.approx(kueue_jobs["wait"].mean())
    waits = sorted(kueue_jobs["wait"].to_list())
    for name, q in (("admission_wait_p50_seconds", 0.5), ("admission_wait_p95_seconds", 0.95)):
        truth_value = waits[math.ceil(q * len(waits)) - 1]  # the value histogram_quantile's bucket holds
        if truth_value > WAIT_BUCKETS[-1]:  # in +Inf: the largest finite bound, a lower bound
            assert training[name] == WAIT_BUCKETS[-1], (name, training[name], truth_value)
        else:
            assert _bucket(training[name]) == _bucket(truth_value), (name, training[name], truth_value)
    # queueing over quota: workloads wait and pile up; usage never exceeds the 16-GPU quota (no borrowing)
    assert training["admission_wait_p95_seconds"] > 0 and training["pending_workloads_max"] > 0
    assert training["gpu_nominal_quota"] == 16.0 and 0 < training["usage_share_peak"] <= 1.0
    assert training["borrowed_gpu_hours"] == 0.0
    volcano = queues.filter(pl.col("queue_kind") == "volcano").row(0, named=True)
    gangs = truth.filter((pl.col("scheduler") == "volcano") & pl.col("scheduled_time").is_not_null())
    assert volcano["queue"] == VOLCANO_QUEUE and volcano["scheduled_jobs"] == gangs["job_key"].n_unique() > 0
    assert volcano["scheduling_duration_max_seconds"] > 0
    section = mixed["review"].split('id="kube-queues"', 1)[1].split("</section>", 1)[0]
    assert CLUSTER_QUEUE in section and VOLCANO_QUEUE in section


def test_mixed_month_deployments_roll_up_per_month(mixed: dict, truth: pl.DataFrame) -> None:
    deployments = mixed["marts.mart_deployment_monthly"]
    usage = mixed["marts.fct_job_usage"].filter(pl.col("scheduler") == "kubernetes")
    replicas = truth.filter(pl.col("deployment_name").is_not_null() & pl.col("start_time").is_not_null())
    expected = replicas.group_by("namespace", "deployment_name").agg(pods=pl.len())
    joined = expected.join(deployments, on=["namespace", "deployment_name"], how="full", coalesce=True)
    assert set(joined["deployment_name"]) >= {"chat-api", "embed-api", "rerank-api"}
    assert (joined["pods"] == joined["replica_pods"]).all(), joined.select("deployment_name", "pods", "replica_pods")
    chat = deployments.filter(pl.col("deployment_name") == "chat-api").row(0, named=True)
    assert chat["peak_replicas"] >= 7 and chat["gpu_model"] == "H100"
    in_deployments = usage.filter(pl.col("job_id").str.contains("-api-"))["gpu_hours"].sum()
    assert deployments["gpu_hours"].sum() == pytest.approx(in_deployments)
    assert set(deployments.filter(pl.col("deployment_name") == "embed-api")["gpu_model"]) == {"A100 1g.10gb"}
