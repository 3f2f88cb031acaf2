"""Adding a metrics source is one mapping: a site's own exporter vocabulary (its metric and
label names, memory in bytes), registered, chosen by the config and read through the same
reader into the same raw rows as dcgm-exporter's names give."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from config import ClusterConfig, parse_config
from contracts.exporters import DCGM, EXPORTERS, Exporter, ExporterMetric, SeriesLabels
from contracts.schemas import LABEL_COLUMNS, RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from simulate.samples import generate_day
from sources.metrics import FileMetricsSource
from sources.prometheus.source import PrometheusMetricsSource
from tests.fixtures.dcgm_openmetrics import render_openmetrics
from tests.integration.test_om_promtool import allocations, inventory
from tests.unit.config_cases import example, problems_of, put

SITE = Exporter(
    name="site",
    title="site-gpu-exporter",
    metrics=(
        ExporterMetric("gpu_busy_percent", "gpu_util"),
        ExporterMetric("gpu_sm_active_ratio", "sm_active"),
        ExporterMetric("gpu_memory_used_bytes", "fb_used_mib", scale=2**-20),
        ExporterMetric("gpu_memory_free_bytes", "fb_free_mib", scale=2**-20),
        ExporterMetric("gpu_power_watts", "power_w"),
        ExporterMetric("gpu_energy_millijoules", "energy_mj"),
    ),
    labels=SeriesLabels(
        hostname=("node",),
        integers={"gpu_index": "gpu", "mig_instance": "gpu_i_id"},
        strings={
            "gpu_uuid": "uuid",
            "gpu_model": "model_name",
            "pci": "pci_bus_id",
            "dev": "device",
            "mig_profile": "gpu_i_profile",
            "slurm_job": "hpc_job",
        },
        workload={"pod": ("k8s_pod",), "namespace": ("k8s_namespace",), "container": ("k8s_container",)},
    ),
)
T0 = datetime(2026, 3, 2)
KEYS = ["hostname", "gpu", "gpu_i_id", "hpc_job", "ts"]
RACK = {"site_rack": "r7"}


@pytest.fixture
def site_registered(monkeypatch: pytest.MonkeyPatch) -> Exporter:
    monkeypatch.setitem(EXPORTERS, SITE.name, SITE)
    return SITE


def samples() -> pl.DataFrame:
    """Two hours of simulated rows (MIG instances, jobs, idle GPUs), node1's GPUs held by a pod."""
    frame = generate_day(inventory(), allocations(), date(2026, 3, 2), 60, 3, "it")
    pod = pl.col("hostname") == "node1"
    return frame.filter(pl.col("ts") < T0 + timedelta(hours=2)).with_columns(
        pl.when(pod).then(pl.lit(value)).alias(column)
        for column, value in {"pod": "train-0", "namespace": "ml", "container": "main"}.items()
    )


def write_in_names(frame: pl.DataFrame, exporter: Exporter, path: Path) -> Path:
    """``frame``'s signals as OpenMetrics text in ``exporter``'s metric and label names and units."""
    labels = {
        str(exporter.labels.label_of(column)): pl.col(column).cast(pl.String)
        for column in LABEL_COLUMNS
        if exporter.labels.label_of(column) is not None
    }
    labels |= {name: pl.lit(value) for name, value in RACK.items()}
    parts = [
        frame.filter(pl.col(metric.signal).is_not_null()).select(
            pl.lit(metric.name).alias("__name__"),
            *(expr.alias(name) for name, expr in labels.items()),
            (pl.col("ts").dt.epoch("us") // 1000).alias("ts_ms"),
            (pl.col(metric.signal) / metric.scale).alias("value"),
        )
        for metric in exporter.metrics
    ]
    return render_openmetrics(pl.concat(parts), path)


def file_cluster(path: Path, exporter: str, **prometheus: object) -> ClusterConfig:
    metrics = {"source": "file", "path": str(path), "exporter": exporter}
    changes = [put("clusters[0].metrics", metrics)]
    changes += [put(f"clusters[0].prometheus.{key}", value) for key, value in prometheus.items()]
    return parse_config(example(*changes)).cluster("alpha")


def test_a_site_vocabulary_reads_into_the_same_raw_rows(tmp_path: Path, site_registered: Exporter) -> None:
    frame = samples()
    site_file = write_in_names(frame, SITE, tmp_path / "site.om")
    dcgm_file = write_in_names(frame, DCGM, tmp_path / "dcgm.om")
    assert "gpu_memory_used_bytes{node=" in site_file.read_text() and "DCGM_FI" not in site_file.read_text()

    start, end = T0 + timedelta(minutes=30), T0 + timedelta(hours=2)
    got = FileMetricsSource.from_config(file_cluster(site_file, "site")).read_samples("it", start, end)
    via_dcgm = FileMetricsSource.from_config(file_cluster(dcgm_file, "dcgm")).read_samples("it", start, end)

    carried = set(SITE.metric_signals.values())
    assert carried == {"gpu_util", "sm_active", "fb_used_mib", "fb_free_mib", "power_w", "energy_mj"}
    expected = frame.filter(pl.col("ts").is_between(start, end, closed="left")).with_columns(
        *(pl.lit(None, pl.Float64).alias(c) for c in SAMPLE_VALUE_COLUMNS if c not in carried),
        pl.lit(json.dumps(RACK, separators=(",", ":"))).alias("extra_labels"),
    )
    assert got.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    assert got.height == expected.height > 1000
    assert got.get_column("pod").drop_nulls().unique().to_list() == ["train-0"]
    assert_frame_equal(
        got.sort(KEYS, nulls_last=True), expected.select(list(RAW_SAMPLE_SCHEMA)).sort(KEYS, nulls_last=True)
    )
    dcgm_only = [c for c in SAMPLE_VALUE_COLUMNS if c not in carried]
    assert_frame_equal(got.drop(dcgm_only), via_dcgm.drop(dcgm_only))
    assert via_dcgm.select(pl.col(dcgm_only).count()).row(0) != (0,) * len(dcgm_only)


def test_the_config_chooses_the_exporter_and_checks_metric_names_against_it(site_registered: Exporter) -> None:
    cluster = file_cluster(Path("site.om"), "site", metric_names={"gpu_sm_active_ratio": "rack7_sm_active"})
    source = PrometheusMetricsSource.from_config(cluster)
    assert list(source.signals) == [
        "gpu_busy_percent",
        "rack7_sm_active",
        "gpu_memory_used_bytes",
        "gpu_memory_free_bytes",
        "gpu_power_watts",
        "gpu_energy_millijoules",
    ]
    assert source.fields["rack7_sm_active"] == "gpu_sm_active_ratio"
    assert FileMetricsSource.from_config(cluster).exporter is SITE

    wrong = example(
        put("clusters[0].metrics.exporter", "site"),
        put("clusters[0].prometheus.metric_names", {"DCGM_FI_PROF_SM_ACTIVE": "sm"}),
    )
    [problem] = problems_of(wrong)
    assert problem.key == "clusters[0].prometheus.metric_names.DCGM_FI_PROF_SM_ACTIVE"
    assert problem.reason == "not a metric of site-gpu-exporter (metrics.exporter = 'site')"


def test_an_unknown_exporter_is_named_with_the_known_ones(site_registered: Exporter) -> None:
    [problem] = problems_of(example(put("clusters[0].metrics.exporter", "sitee")))
    assert problem.key == "clusters[0].metrics.exporter"
    assert problem.reason.endswith("unknown exporter 'sitee'; did you mean 'site'?; known: ['dcgm', 'site']")


def test_two_metrics_under_one_name_are_refused() -> None:
    clash = {"DCGM_FI_PROF_SM_ACTIVE": "DCGM_FI_DEV_GPU_UTIL"}
    [problem] = problems_of(example(put("clusters[0].prometheus.metric_names", clash)))
    assert problem.key == "clusters[0].prometheus.metric_names"
    assert problem.reason == "two metrics would both be read as 'DCGM_FI_DEV_GPU_UTIL'"
