"""Data that is wrong in the wild, through a real Prometheus: ingest, then screen_samples.

The dataset and its facts are tests/fixtures/dcgm_wild.py (two hosts, both host label
spellings, MIG, the exported_* rename, old pod labels, sentinels, out-of-range values, a
restart duplicate, an energy counter reset, a scrape gap, GR_ENGINE_ACTIVE stuck at 0, an
unknown label).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import polars as pl
import pytest

from contracts.schemas import SAMPLE_VALUE_COLUMNS
from sources.metrics import MetricsSourceError
from tests.fixtures.dcgm_openmetrics import wild_om
from tests.fixtures.dcgm_wild import T0
from tests.fixtures.prom_config import prometheus_source
from transforms.helpers.dcgm_quality import ScreenResult, screen_samples
from transforms.staging.stg_dcgm__field_presence import stg_dcgm__field_presence
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLUSTER = "wild"


@pytest.fixture(scope="module")
def wild(prometheus_with, tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, ScreenResult, dict]:
    path, facts = wild_om(tmp_path_factory.mktemp("wild") / "wild.om")
    url = prometheus_with([path])
    source = prometheus_source(
        url, cluster=CLUSTER, step_seconds=facts["step_seconds"], scrape_interval_seconds=facts["step_seconds"]
    )
    raw = source.read_samples(CLUSTER, facts["start"], facts["end"])
    return raw, screen_samples(raw, facts["start"].date().isoformat()), facts


def gpu(frame: pl.DataFrame, host: str, index: int) -> pl.DataFrame:
    return frame.filter(pl.col("hostname") == host, pl.col("gpu") == index)


def extra(row: dict) -> dict:
    return json.loads(row["extra_labels"])


def test_every_sample_arrives(wild) -> None:
    raw, screened, facts = wild
    assert raw.select(pl.col(SAMPLE_VALUE_COLUMNS).count()).sum_horizontal().item() == facts["n_samples"]
    assert screened.counts["input_values"] == facts["n_samples"]


def test_labels_are_normalized(wild) -> None:
    _, screened, facts = wild
    clean = screened.clean
    assert set(clean["hostname"]) == facts["hosts"]  # Hostname and hostname; no exporter pod as host
    a1 = gpu(clean, "node-a", 1).row(0, named=True)
    assert (a1["pod"], a1["namespace"]) == facts["old_pod_labels"][("node-a", 1)]  # pod_name / pod_namespace
    assert extra(a1)["site_rack"] == "r12"  # an unknown label is kept
    for (host, index, gi), (pod, namespace, container) in facts["workloads"].items():
        instance = pl.col("gpu_i_id") == gi if gi is not None else pl.col("gpu_i_id").is_null()
        rows = gpu(clean, host, index).filter(instance)
        row = rows.filter(pl.col("pod").is_not_null()).row(0, named=True)
        assert (row["pod"], row["namespace"], row["container"]) == (pod, namespace, container)
        labels = extra(row)  # the exporter's own pod labels are kept, not taken for the workload
        assert {k: labels[k] for k in facts["exporter"]} == facts["exporter"]
    jobs = gpu(clean, "node-a", 0).group_by("hpc_job").len()
    assert dict(jobs.drop_nulls("hpc_job").iter_rows()) == facts["jobs"]


def test_sentinels_and_out_of_range_values_are_quarantined(wild) -> None:
    _, screened, facts = wild
    counts, quarantine = screened.counts, screened.quarantine
    assert counts["sentinel_values"] == sum(facts["sentinels"].values())
    assert counts["out_of_range_values"] == sum(facts["out_of_range"].values())
    sentinel = quarantine.filter(pl.col("reason").str.starts_with("DCGM blank sentinel"))
    assert sentinel["n_rows"].sum() == sum(facts["sentinels"].values())
    assert set(sentinel["location"].str.extract(r"field=(\w+)")) == set(facts["sentinels"])
    reasons = " | ".join(quarantine["reason"])
    for pattern in (
        r"sm_active above 1 \(max 1\.7\)",
        r"gpu_util above 100 \(max 140(\.0)?\)",
        r"power_w below 0 \(min -5(\.0)?\)",
    ):
        assert re.search(pattern, reasons), pattern
    host, index = facts["sentinel_host"]
    a1 = gpu(screened.clean, host, index)
    assert a1.select(pl.col("power_w").max()).item() < 3000 and a1["gpu_util"].max() <= 100  # nulled, not kept


def test_restart_duplicate_removed_and_counted(wild) -> None:
    raw, screened, facts = wild
    assert raw.filter(pl.col("hostname") == facts["duplicate_hostname"]).height == facts["duplicate_rows"]
    assert screened.counts["duplicate_rows"] == facts["duplicate_rows"]
    assert screened.counts["duplicate_values"] == facts["duplicate_samples"]
    a0 = gpu(screened.clean, "node-a", 0)
    # The copy kept is the GPU's own series (hostname node-a), not the one labelled with the
    # exporter's pod name: that would make a phantom host holding 5 minutes of this GPU.
    hosts = screened.clean.filter(pl.col("uuid") == a0["uuid"][0])["hostname"].unique().to_list()
    assert hosts == ["node-a"], f"restart duplicate resolved to the exporter pod's series: hosts {hosts}"
    assert a0.height == facts["timestamps"] and a0["ts"].n_unique() == facts["timestamps"]


def test_mig_device_fields_are_not_double_counted(wild) -> None:
    _, screened, facts = wild
    mig = gpu(screened.clean, facts["mig"]["hostname"], facts["mig"]["gpu"])
    instances = mig.filter(pl.col("gpu_i_id").is_not_null())
    device = mig.filter(pl.col("gpu_i_id").is_null())
    assert sorted(instances["gpu_i_id"].unique()) == facts["mig"]["gpu_i_ids"]
    assert screened.counts["mig_device_rows"] == facts["mig"]["device_rows"] == device.height
    assert device["ts"].n_unique() == device.height  # one device row per GPU and timestamp
    assert instances.select(pl.col("power_w", "energy_mj", "gpu_util").count()).sum_horizontal().item() == 0
    assert instances["sm_active"].count() == 2 * facts["timestamps"]  # per-instance fields stay


def hourly(screened: ScreenResult, facts: dict) -> pl.DataFrame:
    return stg_dcgm__gpu_hourly(screened.clean.lazy(), facts["step_seconds"]).collect()


def test_gap_lowers_coverage_and_is_not_filled(wild) -> None:
    _, screened, facts = wild
    gap = facts["gap"]
    rows = gpu(hourly(screened, facts), gap["hostname"], gap["gpu"]).filter(pl.col("hour") == gap["hour"])
    assert rows["n_samples"].sum() == gap["n_samples"] and rows["expected_samples"][0] == gap["expected_samples"]
    assert rows["coverage"][0] == pytest.approx(gap["n_samples"] / gap["expected_samples"])
    seen = gpu(screened.clean, gap["hostname"], gap["gpu"])["ts"]
    assert seen.diff().max() == timedelta(seconds=facts["step_seconds"] * (gap["missing"] + 1))


def test_energy_is_the_true_increase_through_reset_gap_sentinel_and_mig(wild) -> None:
    _, screened, facts = wild
    energy = hourly(screened, facts).group_by("hostname", "gpu", "hour").agg(pl.col("energy_delta_mj").sum())
    got = {((h, g), hour): e for h, g, hour, e in energy.iter_rows()}
    for key, per_hour in facts["energy_mj"].items():
        for hour, expected in per_hour.items():
            assert got[(key, hour)] == pytest.approx(expected), (key, hour)
    total = sum(e for per_hour in facts["energy_mj"].values() for e in per_hour.values())
    assert energy["energy_delta_mj"].sum() == pytest.approx(total)  # no phantom host or instance adds any
    reset = facts["energy_reset"]
    raw_energy = gpu(screened.clean, reset["hostname"], reset["gpu"]).sort("ts")["energy_mj"]
    assert (raw_energy.diff() < 0).sum() == 1  # the reset is in the data, and handled above


def test_flat_zero_gr_engine_is_flagged_suspect(wild) -> None:
    _, screened, facts = wild
    presence = stg_dcgm__field_presence(screened.clean, facts["start"].date())
    suspects = presence.filter(pl.col("suspect_flat_zero")).select("hostname", "gpu", "field").rows()
    flat = facts["flat_zero"]
    assert suspects == [(flat["hostname"], flat["gpu"], flat["field"])]


def test_unreachable_server_fails_naming_url_and_query() -> None:
    from cardhours.bench.prometheus_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    source = prometheus_source(url, cluster=CLUSTER, max_retries=1, timeout_seconds=2)
    with pytest.raises(MetricsSourceError) as failure:
        source.read_samples(CLUSTER, T0, T0 + timedelta(hours=1))
    message = str(failure.value)
    assert url in message and "DCGM_FI_" in message and "2 attempt" in message
