"""Simulator (--kube) -> promtool back-fill -> real Prometheus -> KubeReader -> landing ->
stg_kube__pods / stg_kube__jobs, checked against truth_pods.parquet (the site: conftest.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from config import load_config
from config.cluster import ClusterConfig
from simulate.run import SimulationResult
from sources.kube.landing import Landing
from sources.prometheus.source import PrometheusMetricsSource
from tests.integration.kube.cases import STEP, T0, T1
from tests.integration.kube.reading import land_days
from transforms.staging.stg_kube__jobs import stg_kube__jobs
from transforms.staging.stg_kube__pods import stg_kube__pods

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def landings(cluster: ClusterConfig) -> list[Landing]:
    return land_days(cluster)


@pytest.fixture(scope="module")
def staged(sim: SimulationResult, cluster: ClusterConfig, landings: list[Landing]) -> tuple[pl.DataFrame, pl.DataFrame]:
    config = load_config(sim.config_path)
    kube = cluster.kubernetes
    pods, bad = stg_kube__pods(
        pl.concat([x.series for x in landings]),
        config.namespaces_frame(),
        window_start=datetime(2026, 3, 1),
        window_end=datetime(2026, 4, 1),
        data_end=T1,
        step_seconds=STEP,
        department_labels=kube.department_labels,
        queue_label=kube.queue_label,
        mig_weights=dict(config.rates.mig_profile_weights),
    )
    assert bad.is_empty()
    return pods, stg_kube__jobs(pods)


def test_every_pod_staged_with_card_hours_within_one_step(staged, truth: pl.DataFrame) -> None:
    pods, _ = staged
    joined = truth.join(
        pods,
        left_on=["namespace", "pod", "pod_uid"],
        right_on=["namespace", "pod", "pod_uid"],
        how="full",
        suffix="_staged",
        coalesce=True,
    )
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
    assert (
        (mig["gpus_staged"] - mig["mig_profile"].replace_strict({"1g.10gb": 1 / 7, "3g.40gb": 3 / 7})).abs() < 1e-12
    ).all()
    assert joined.filter(
        pl.col("deployment_name").is_not_null() & (pl.col("deployment_name") != pl.col("deployment_name_staged"))
    ).is_empty()


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
    waits = volcano.group_by("job_key").agg(
        w=(pl.col("scheduled_time").max() - pl.col("created_time").min()).dt.total_seconds()
    )
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

    def clip(c):
        return pl.min_horizontal(pl.max_horizontal(pl.col(c), pl.lit(T0)), pl.lit(day_end))

    truth_day = truth.filter(pl.col("start_time").is_not_null()).with_columns(
        expect=(clip("end_time").fill_null(pl.lit(day_end)) - clip("start_time")).dt.total_seconds()
        * pl.col("gpu_slots")
    )
    joined = truth_day.filter(pl.col("expect") > 0).join(sampled, on=["namespace", "pod"], how="left")
    off = joined.filter((pl.col("seconds").fill_null(0) - pl.col("expect")).abs() > STEP * pl.col("gpu_slots"))
    assert off.is_empty(), off.select("pod", "expect", "seconds")
