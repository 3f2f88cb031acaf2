"""The simulated Kubernetes pool: placement, the quota queue, the day/night curve, the
segment writer, DCGM workload labels, and the pods' truth."""

from __future__ import annotations

from datetime import date, datetime

import numpy as np
import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA, empty_frame
from simulate.jobs import build_org
from simulate.kube import dcgm
from simulate.kube.om_text import Series, write_openmetrics
from simulate.kube.pool import SlotPool
from simulate.kube.run import QUOTA_GPUS, KubeSimulation
from simulate.kube.services import day_night
from simulate.kube.training import run_training
from sources.openmetrics import read_openmetrics

DAY = 86_400


@pytest.fixture(scope="module")
def kube() -> KubeSimulation:
    return KubeSimulation("sim", date(2026, 3, 2), 3, 60, seed=4, org=build_org(4))


def test_fit_places_each_pod_on_one_node_and_earliest_waits_for_release() -> None:
    pool = SlotPool.of(("kgpu-002", "kgpu-003"))
    placed = pool.fit(0, [8, 8])
    assert placed is not None and {s[0] for s in placed[0]} != {s[0] for s in placed[1]}
    pool.hold(placed[0], 100)
    pool.hold(placed[1], 200)
    assert pool.fit(50, [1]) is None
    assert pool.earliest(50, [8])[0] == 100 and pool.earliest(50, [8, 8])[0] == 200
    assert pool.earliest(50, [9]) is None


def test_training_queue_is_fifo_within_the_quota() -> None:
    jobs = run_training(SlotPool.of(("kgpu-002", "kgpu-003")), np.random.default_rng(1), 3 * DAY, ("a", "b"))
    admitted = [j.admitted for j in jobs if j.admitted is not None]
    assert admitted == sorted(admitted) and all(j.admitted >= j.submit for j in jobs if j.admitted is not None)
    assert any(j.admitted - j.submit > 600 for j in jobs if j.admitted is not None)  # over quota: queued
    events = sorted(
        (t, g)
        for j in jobs
        for p in j.pods
        if p.started is not None
        for t, g in ((p.started, p.count), (p.end if p.end is not None else 3 * DAY, -p.count))
    )
    in_use = np.cumsum([g for _, g in events])
    assert in_use.max() <= QUOTA_GPUS
    kueue_unadmitted = [j for j in jobs if j.scheduler == "kueue" and j.admitted is None]
    assert all(not j.pods for j in kueue_unadmitted)  # suspended workloads have no pods


def test_day_night_curve() -> None:
    replicas = day_night(2, 7, 0)
    assert replicas(4 * 3600) == 2 and replicas(16 * 3600) == 7 and replicas(DAY + 16 * 3600) == 7


def test_segments_are_sampled_on_the_grid_and_read_back(tmp_path) -> None:
    series = [
        Series("m", {"a": "1"}, [(0, 90, 1.0), (90, 150, 0.0)]),
        Series("m", {"a": "2"}, [(31, 60, 5.0)]),
        Series("n", {"b": 'x"y'}, [(0, 1, 2.5)]),
    ]
    path = tmp_path / "x.om"
    written = write_openmetrics(
        path, {"m": ("gauge", "M."), "n": ("gauge", "N.")}, series, origin=1_700_000_000, step=30
    )
    text = path.read_text()
    assert written == 6 and text.endswith("# EOF\n") and text.index("# TYPE n") > text.rindex("m{")
    long = read_openmetrics(path, datetime(2023, 1, 1), datetime(2024, 1, 1))
    values = long.samples.join(long.series, on="series_id").sort("__name__", "a", "ts")
    assert values["value"].to_list() == [1.0, 1.0, 1.0, 0.0, 0.0, 2.5]
    with pytest.raises(ValueError, match="no declared family"):
        write_openmetrics(tmp_path / "y.om", {"m": ("gauge", "M.")}, [Series("z", {}, [(0, 1, 1.0)])], 0, 30)


def test_pool_samples_carry_workload_labels_exported_or_direct(kube: KubeSimulation) -> None:
    raw, om = kube.add_day(date(2026, 3, 2), empty_frame(RAW_SAMPLE_SCHEMA))  # no Slurm nodes
    held = raw.filter(pl.col("pod").is_not_null())
    assert held.height and raw["hpc_job"].null_count() == raw.height
    exported = om.filter(pl.col("hostname") == "kgpu-004", pl.col("lbl_exported_pod").is_not_null())
    assert exported.height and (exported["lbl_pod"] == "dcgm-exporter-kgpu-004").all()
    direct = om.filter(pl.col("hostname") == "kgpu-001", pl.col("lbl_pod").is_not_null())
    assert direct.height and direct["lbl_exported_pod"].null_count() == direct.height
    assert set(om["lbl_job"].unique()) == {"gpu-metrics", "dcgm-exporter"}
    with pytest.raises(ValueError, match="unknown pods"):
        dcgm.label_samples(raw.with_columns(pl.lit("1").alias("hpc_job")), kube.markers)


def test_truth_covers_every_scenario(kube: KubeSimulation, tmp_path) -> None:
    kube.write(tmp_path / "kube_state.om", tmp_path / "truth_pods.parquet")
    truth = pl.read_parquet(tmp_path / "truth_pods.parquet")
    assert set(truth["scenario"]) == {"inference", "training", "notebook", "sandbox"}
    assert set(truth["department_source"]) == {"pod_label", "namespace_label", "namespace_mapping", "unmapped"}
    mig = truth.filter(pl.col("mig_profile").is_not_null())
    assert set(zip(mig["mig_profile"], mig["gpus"], strict=True)) == {("1g.10gb", 1 / 7), ("3g.40gb", 3 / 7)}
    started = truth.filter(pl.col("start_time").is_not_null())
    held = (started["end_time"].fill_null(datetime(2026, 3, 5)) - started["start_time"]).dt.total_seconds()
    assert ((held * started["gpus"] - started["gpu_seconds"]).abs() < 1e-6).all()
    notebooks = truth.filter(pl.col("scenario") == "notebook")
    assert notebooks["end_time"].null_count() == 1 and notebooks["has_completion_time"].sum() == 1
    gangs = truth.group_by("job_key").len().filter(pl.col("len") > 1)
    assert gangs.height > 0


def test_cli_flag_writes_the_pool_files_and_a_valid_config(tmp_path) -> None:
    from typer.testing import CliRunner

    from cardhours.cli import app
    from config import load_config

    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--out",
            str(tmp_path),
            "--gpus",
            "8",
            "--days",
            "1",
            "--step",
            "600",
            "--metrics-format",
            "parquet",
            "--kube",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "kube_state:" in result.output and (tmp_path / "truth_pods.parquet").exists()
    config = load_config(tmp_path / "cardhours.toml")
    assert config.clusters[0].kubernetes.path == tmp_path / "kube_state.om"
    assert config.namespaces_frame()["namespace"].to_list() == ["ml-research"]
    assert "kmig-001" in config.inventory_frame()["hostname"].to_list()


def _by_labels(long) -> pl.DataFrame:
    """Samples keyed by their series' labels (ids differ between reads), in a fixed order."""
    labels = [c for c in long.series.columns if c != "series_id"]
    joined = long.samples.join(long.series, on="series_id").drop("series_id")
    return joined.select(sorted(joined.columns)).sort(sorted(labels) + ["ts"], nulls_last=True)


def test_day_files_hold_what_the_one_file_holds_and_a_read_opens_only_its_days(tmp_path) -> None:
    from sources.kube.state_files import day_files, read_state

    kube = KubeSimulation("sim", date(2026, 3, 2), 3, 60, seed=4, org=build_org(4), state_step_seconds=300)
    kube.write(tmp_path / "one.om", tmp_path / "truth.parquet")
    kube.write(tmp_path / "days", tmp_path / "truth_days.parquet", daily=True)
    assert [p.name for p in sorted((tmp_path / "days").iterdir())] == [
        "day=2026-03-02.om",
        "day=2026-03-03.om",
        "day=2026-03-04.om",
    ]
    assert kube.config_lines("kube_state")[1:3] == ['path = "kube_state"', "step_seconds = 300"]
    day, two_days = (datetime(2026, 3, 3), datetime(2026, 3, 4)), (datetime(2026, 3, 3), datetime(2026, 3, 5))
    assert [p.name for p in day_files(tmp_path / "days", *day)] == ["day=2026-03-03.om"]
    for start, end in (day, two_days):  # two days: a series in both files is one series of the read
        one, days = read_openmetrics(tmp_path / "one.om", start, end), read_state(tmp_path / "days", start, end)
        assert days.series.height == one.series.height > 0
        assert _by_labels(days).equals(_by_labels(one))
    steps = read_openmetrics(tmp_path / "one.om", *day).samples["ts"].dt.epoch("s") % 300
    assert (steps == 0).all()  # scraped every 300 s, not at the DCGM step
    assert read_state(tmp_path / "days", datetime(2026, 3, 9), datetime(2026, 3, 10)).series.is_empty()
