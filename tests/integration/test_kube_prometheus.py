"""Simulator (--kube) -> promtool back-fill -> real Prometheus -> KubeReader -> landing ->
stg_kube__pods / stg_kube__jobs, checked against truth_pods.parquet; then the same Prometheus
as one cluster config with Slurm and Kubernetes through the daily and monthly Dagster jobs: pods
as jobs in fct_job_usage, one department mart, one review with both schedulers.

Two simulated days at 120 s: 8 Slurm GPUs plus the Kubernetes pool (inference Deployments
on whole GPUs and MIG slices, Kueue and Volcano gangs against a 16-GPU quota, idle
notebooks, unlabeled sandbox pods; two nodes scraped with ``exported_*`` labels).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance

from cardhours.config import load_config
from cardhours.config.cluster import ClusterConfig, PrometheusConfig
from cardhours.simulate.kube.queues import WAIT_BUCKETS
from cardhours.simulate.kube.training import CLUSTER_QUEUE, VOLCANO_QUEUE
from cardhours.simulate.run import SimulationResult, simulate
from cardhours.sources.kube.landing import Landing, land
from cardhours.sources.kube.reader import KubeReader
from cardhours.sources.prometheus.source import PrometheusMetricsSource
from pipelines.definitions import build_definitions
from transforms.stg_kube__jobs import stg_kube__jobs
from transforms.stg_kube__pods import stg_kube__pods

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STEP = 120
DAYS = 2
T0 = datetime(2026, 3, 2)
T1 = T0 + timedelta(days=DAYS)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(tmp_path_factory.mktemp("kube"), gpus=8, days=DAYS, start=T0.date(), seed=11,
                    step_seconds=STEP, metrics_format="om", kube=True)


@pytest.fixture(scope="module")
def cluster(sim: SimulationResult, prometheus_with) -> ClusterConfig:
    url = prometheus_with([sim.om_path, sim.kube_state_path])
    base = load_config(sim.config_path).clusters[0]
    assert base.kubernetes is not None
    prometheus = PrometheusConfig(url=url, scrape_interval_seconds=STEP, step_seconds=STEP)
    return base.model_copy(update={"prometheus": prometheus, "kubernetes": base.kubernetes.model_copy(update={"path": None})})


@pytest.fixture(scope="module")
def landings(cluster: ClusterConfig) -> list[Landing]:
    reader = KubeReader(cluster)
    assert reader.kube.path is None and reader.client is not None  # through the HTTP API
    days = [T0 + timedelta(days=i) for i in range(DAYS)]
    return [land(reader.read(d, d + timedelta(days=1)), cluster.kubernetes, cluster.name, d.date()) for d in days]


@pytest.fixture(scope="module")
def staged(sim: SimulationResult, cluster: ClusterConfig, landings: list[Landing]) -> tuple[pl.DataFrame, pl.DataFrame]:
    config = load_config(sim.config_path)
    kube = cluster.kubernetes
    pods, bad = stg_kube__pods(
        pl.concat([x.series for x in landings]), config.namespaces_frame(), window_start=datetime(2026, 3, 1),
        window_end=datetime(2026, 4, 1), data_end=T1, step_seconds=STEP, department_labels=kube.department_labels,
        queue_label=kube.queue_label, mig_weights=dict(config.rates.mig_profile_weights))
    assert bad.is_empty()
    return pods, stg_kube__jobs(pods)


@pytest.fixture(scope="module")
def truth(sim: SimulationResult) -> pl.DataFrame:
    """The pods Prometheus can have seen (a pod living between two scrapes leaves no series)."""
    every = pl.read_parquet(sim.truth_pods_path)
    unseen = every.filter(pl.col("n_scrapes") == 0)
    assert (unseen["gpu_seconds"] <= STEP * unseen["gpus"]).all()
    return every.filter(pl.col("n_scrapes") > 0)


def test_every_pod_staged_with_card_hours_within_one_step(staged, truth: pl.DataFrame) -> None:
    pods, _ = staged
    joined = truth.join(pods, left_on=["namespace", "pod", "pod_uid"], right_on=["namespace", "pod", "pod_uid"],
                        how="full", suffix="_staged", coalesce=True)
    assert joined.filter(pl.col("cluster").is_null() | pl.col("cluster_staged").is_null()).is_empty()
    off = joined.filter((pl.col("gpu_seconds_staged") - pl.col("gpu_seconds")).abs() > STEP * pl.col("gpus") + 1e-6)
    assert off.is_empty(), off.select("pod", "gpu_seconds", "gpu_seconds_staged", "end_source")
    exact = joined.filter(pl.col("end_source") == "completion_time")
    assert exact.height > 5 and (exact["gpu_seconds_staged"] - exact["gpu_seconds"]).abs().max() < 1e-6
    assert set(joined["end_source"]) == {"completion_time", "phase", "last_sample"}
    assert joined.filter(pl.col("end_time").is_null() != pl.col("is_open")).is_empty()


def test_queue_times_departments_and_mig_fractions(staged, truth: pl.DataFrame) -> None:
    pods, _ = staged
    joined = truth.join(pods, on=["namespace", "pod"], suffix="_staged")
    assert (joined["queue_seconds"].fill_null(-1) == joined["queue_seconds_staged"].fill_null(-1)).all()
    assert joined.filter(pl.col("queue_seconds_staged") > 600).height > 0  # Volcano gangs, full sandbox node
    assert (joined["department"] == joined["department_staged"]).all()
    assert (joined["department_source"] == joined["department_source_staged"]).all()
    assert set(joined["department_source"]) == {"pod_label", "namespace_label", "namespace_mapping", "unmapped"}
    unlabeled = joined.filter(pl.col("namespace") == "sandbox")
    assert unlabeled.height > 0 and (unlabeled["department_staged"] == "unmapped").all()
    mig = joined.filter(pl.col("mig_profile").is_not_null())
    assert set(mig["mig_profile_staged"]) == {"1g.10gb", "3g.40gb"}
    assert ((mig["gpus_staged"] - mig["mig_profile"].replace_strict({"1g.10gb": 1 / 7, "3g.40gb": 3 / 7})).abs() < 1e-12).all()
    assert joined.filter(pl.col("deployment_name").is_not_null() & (pl.col("deployment_name") != pl.col("deployment_name_staged"))).is_empty()


def test_gang_jobs_counted_once(staged, truth: pl.DataFrame) -> None:
    pods, jobs = staged
    expected = truth.group_by("job_key").agg(n=pl.len(), gpus=pl.col("gpus").sum(), seconds=pl.col("gpu_seconds").sum())
    joined = expected.join(jobs, left_on="job_key", right_on="job_id", how="full", coalesce=True)
    assert joined.filter(pl.col("n").is_null() | pl.col("n_pods").is_null()).is_empty()
    assert (joined["n"] == joined["n_pods"]).all() and ((joined["gpus"] - joined["gpus_right"]).abs() < 1e-9).all()
    gangs = joined.filter(pl.col("n") > 1)
    assert gangs.height >= 3 and jobs.height == expected.height and jobs["job_id"].is_unique().all()
    assert jobs["gpu_seconds"].sum() == pytest.approx(pods["gpu_seconds"].sum())
    volcano = truth.filter(pl.col("scheduler") == "volcano", pl.col("scheduled_time").is_not_null())
    waits = volcano.group_by("job_key").agg(w=(pl.col("scheduled_time").max() - pl.col("created_time").min()).dt.total_seconds())
    got = waits.join(jobs, left_on="job_key", right_on="job_id")
    assert got.height > 0 and (got["w"].cast(pl.Float64) == got["queue_seconds"]).all()


def test_kueue_counters_match_admissions(landings: list[Landing], truth: pl.DataFrame) -> None:
    queue = pl.concat([x.queue_samples for x in landings])
    count = queue.filter(pl.col("metric") == "kueue_admission_wait_time_seconds_count").sort("ts")["value"][-1]
    admitted = truth.filter(pl.col("scheduler") == "kueue")["job_key"].n_unique()
    assert count == admitted and admitted > 0
    quota = queue.filter(pl.col("metric") == "kueue_cluster_queue_nominal_quota")["value"].unique().to_list()
    usage = queue.filter(pl.col("metric") == "kueue_cluster_queue_resource_usage")["value"]
    assert quota == [16.0] and usage.max() <= 16.0


def test_dcgm_samples_name_the_pod_also_when_exported(cluster: ClusterConfig, truth: pl.DataFrame) -> None:
    day_end = T0 + timedelta(days=1)
    samples = PrometheusMetricsSource(cluster.prometheus).read_samples(cluster.name, T0, day_end)
    held = samples.filter(pl.col("pod").is_not_null() & pl.col("sm_active").is_not_null())
    assert not held["pod"].str.starts_with("dcgm-exporter").any()
    on_exported = held.filter(pl.col("hostname").is_in(["kgpu-003", "kgpu-004"]))
    assert on_exported.height > 0 and (on_exported["extra_labels"].str.contains('"job":"dcgm-exporter"')).all()
    sampled = held.group_by("namespace", "pod").agg(seconds=pl.len() * STEP)
    clip = lambda c: pl.min_horizontal(pl.max_horizontal(pl.col(c), pl.lit(T0)), pl.lit(day_end))  # noqa: E731
    truth_day = truth.filter(pl.col("start_time").is_not_null()).with_columns(
        expect=(clip("end_time").fill_null(pl.lit(day_end)) - clip("start_time")).dt.total_seconds() * pl.col("gpu_slots"))
    joined = truth_day.filter(pl.col("expect") > 0).join(sampled, on=["namespace", "pod"], how="left")
    off = joined.filter((pl.col("seconds").fill_null(0) - pl.col("expect")).abs() > STEP * pl.col("gpu_slots"))
    assert off.is_empty(), off.select("pod", "expect", "seconds")


# -- the mixed month: Slurm and Kubernetes in one cluster config, through Dagster to the review --

MIXED_MONTH = "2026-03-01"


def _mixed_config(sim: SimulationResult, url: str) -> Path:
    """The simulator's config with the DCGM samples and kube-state-metrics read from Prometheus."""
    text = sim.config_path.read_text()
    text = re.sub(r'\[clusters\.metrics\]\n(?:[^\[\n][^\n]*\n)*',
                  f'[clusters.metrics]\nsource = "prometheus"\nstep_seconds = {STEP}\n\n'
                  f'[clusters.prometheus]\nurl = "{url}"\nscrape_interval_seconds = {STEP}\nstep_seconds = {STEP}\n\n', text)
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
            assert definitions.resolve_job_def("daily_ingest").execute_in_process(partition_key=day, instance=instance).success
        result = definitions.resolve_job_def("monthly_review").execute_in_process(partition_key=MIXED_MONTH, instance=instance)
    assert result.success
    checks = {(tuple(e.asset_key.path), e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    conn = duckdb.connect(str(config_path.with_name("mixed.duckdb")), read_only=True)
    try:
        tables = {name: conn.sql(f"SELECT * FROM {name}").pl() for name in (
            "marts.fct_job_usage", "marts.mart_department_monthly", "marts.fct_gpu_hourly",
            "intermediate.int_gpu_minutes_attributed", "marts.mart_deployment_monthly",
            "marts.mart_kube_queue_monthly")}
    finally:
        conn.close()
    review = (config_path.parent / "mixed_reports" / "2026-03" / "review.html").read_text()
    return {"checks": checks, "review": review, **tables}


def _seen_jobs(truth: pl.DataFrame) -> pl.DataFrame:
    """Per truth job key: pods, GPUs, card-seconds, wait (first created -> last scheduled), open or not."""
    return truth.group_by("job_key").agg(
        n_pods=pl.len(), gpus=pl.col("gpus").sum(), seconds=pl.col("gpu_seconds").sum(),
        wait=(pl.col("scheduled_time").max() - pl.col("created_time").min()).dt.total_seconds(),
        open=pl.col("end_time").is_null().any(), department=pl.col("department").first(),
        namespace=pl.col("namespace").first(), mig=pl.col("mig_profile").first())


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
    assert sandbox.height > 0 and (sandbox["department_right"] == "unmapped").all() and (sandbox["division"] == "unmapped").all()
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
    assert hourly.filter(~on_pool)["allocated_seconds"].sum() / 3600 == pytest.approx(slurm["gpu_hours"].sum(), abs=1e-6)
    kube_allocated = hourly.filter(on_pool)["allocated_seconds"].sum() / 3600
    assert abs(kube_allocated - kube["gpu_hours"].sum()) <= kube["gpus"].sum() * STEP / 3600
    assert hourly["allocated_seconds"].sum() / 3600 == pytest.approx(usage["gpu_hours"].sum(), rel=1e-3)
    assert (hourly["allocated_seconds"] <= hourly["capacity_seconds"] + 1e-6).all()


def _bucket(seconds: float) -> int:
    """Index of the Kueue wait bucket (1, 2, 4, ... s) holding ``seconds``."""
    return 0 if seconds <= 1 else math.ceil(math.log2(seconds))


def test_mixed_month_queue_mart_against_the_truth(mixed: dict, truth: pl.DataFrame) -> None:
    queues = mixed["marts.mart_kube_queue_monthly"]
    kueue_jobs = truth.filter(pl.col("scheduler") == "kueue").group_by("job_key").agg(
        wait=((pl.col("created_time").min() - pl.col("submit_time").min()).dt.total_seconds() - 1).cast(pl.Float64))
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
