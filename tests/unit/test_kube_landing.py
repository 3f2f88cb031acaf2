"""The raw landing of kube-state-metrics series (pure) and the reader's merge helpers."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import numpy as np
import polars as pl

from config.kubernetes import KubernetesConfig
from sources.kube.landing import RAW_KUBE_QUEUE_SCHEMA, RAW_KUBE_SERIES_SCHEMA, land
from sources.kube.reader import chunk_ms, keep_metrics, to_long
from sources.prometheus import SAMPLES_SCHEMA, LongSamples
from sources.prometheus.decode import Matrix

T0 = datetime(2026, 3, 2)
DAY = date(2026, 3, 2)


def long_of(series: list[dict[str, str]], samples: list[tuple[int, float, float]]) -> LongSamples:
    """series label sets (with __name__); samples (series index, seconds after T0, value)."""
    names = sorted({k for s in series for k in s} - {"__name__"})
    frame = pl.DataFrame(
        {
            "series_id": pl.Series(range(len(series)), dtype=pl.UInt32),
            "__name__": [s["__name__"] for s in series],
            **{n: pl.Series([s.get(n) for s in series], dtype=pl.String) for n in names},
        }
    )
    rows = pl.DataFrame(
        [(i, T0 + timedelta(seconds=t), v) for i, t, v in samples],
        schema={"series_id": pl.UInt32, "ts": pl.Datetime("us"), "value": pl.Float64},
        orient="row",
    )
    return LongSamples(frame, rows.sort("series_id", "ts"))


POD = {"namespace": "ns", "pod": "p", "uid": "u"}


def test_a_series_becomes_one_summary_row() -> None:
    phase = {"__name__": "kube_pod_status_phase", **POD, "phase": "Running"}
    landing = land(long_of([phase], [(0, 0, 1), (0, 30, 1), (0, 60, 0), (0, 90, 0)]), KubernetesConfig(), "c", DAY)
    row = landing.series.row(0, named=True)
    assert landing.series.schema == pl.Schema(RAW_KUBE_SERIES_SCHEMA)
    assert (row["first_ts"], row["last_ts"], row["n_samples"]) == (T0, T0 + timedelta(seconds=90), 4)
    assert (row["first_value"], row["last_value"], row["min_value"], row["max_value"]) == (1, 0, 0, 1)
    assert row["last_nonzero_ts"] == T0 + timedelta(seconds=30) and json.loads(row["labels"]) == {"phase": "Running"}


def test_only_allowlisted_pod_labels_are_kept() -> None:
    labels = {"__name__": "kube_pod_labels", **POD, "label_department": "d", "label_secret": "x", "label_team": "t"}
    info = {"__name__": "kube_pod_info", **POD, "label_other": "kept", "node": "n1"}
    kube = KubernetesConfig(label_allowlist=["label_team"], department_labels=["label_department"])
    landing = land(long_of([labels, info], [(0, 0, 1), (1, 0, 1)]), kube, "c", DAY)
    kept = {r["metric"]: json.loads(r["labels"]) for r in landing.series.iter_rows(named=True)}
    assert kept["kube_pod_labels"] == {"label_department": "d", "label_team": "t"}
    assert kept["kube_pod_info"] == {"label_other": "kept", "node": "n1"}


def test_pod_series_without_pod_label_is_quarantined_with_its_count() -> None:
    orphan = {"__name__": "kube_pod_created", "namespace": "ns"}
    namespace = {"__name__": "kube_namespace_labels", "namespace": "ns"}
    landing = land(long_of([orphan, namespace], [(0, 0, 5), (0, 30, 5), (1, 0, 1)]), KubernetesConfig(), "c", DAY)
    assert landing.series["metric"].to_list() == ["kube_namespace_labels"]
    assert landing.quarantine["n_rows"].to_list() == [2] and landing.quarantine["source"].to_list() == ["kube"]
    assert "kube_pod_created" in landing.quarantine["location"][0]


def test_kueue_series_land_sample_by_sample_when_enabled() -> None:
    pending = {"__name__": "kueue_pending_workloads", "cluster_queue": "cq", "status": "active"}
    samples = [(0, 0, 2), (0, 30, 3)]
    off = land(long_of([pending], samples), KubernetesConfig(), "c", DAY)
    assert off.queue_samples.is_empty() and off.series.height == 1
    on = land(long_of([pending], samples), KubernetesConfig(kueue={"enabled": True}), "c", DAY)
    assert on.queue_samples.schema == pl.Schema(RAW_KUBE_QUEUE_SCHEMA) and on.series.is_empty()
    assert on.queue_samples["value"].to_list() == [2, 3] and on.queue_samples["queue"].unique().to_list() == ["cq"]


def test_volcano_and_wait_buckets_land_as_queue_samples_with_their_queue() -> None:
    volcano = {"__name__": "volcano_e2e_job_scheduling_duration", "queue": "vq", "job_name": "j1"}
    bucket = {"__name__": "kueue_admission_wait_time_seconds_bucket", "cluster_queue": "cq", "le": "+Inf"}
    samples = [(0, 0, 5000.0), (1, 0, 1.0)]
    off = land(long_of([volcano, bucket], samples), KubernetesConfig(), "c", DAY)
    assert off.queue_samples.is_empty()
    kube = KubernetesConfig(kueue={"enabled": True}, volcano={"enabled": True})
    on = land(long_of([volcano, bucket], samples), kube, "c", DAY).queue_samples.sort("metric")
    assert on["queue"].to_list() == ["cq", "vq"] and on["value"].to_list() == [1.0, 5000.0]


def test_chunks_keep_responses_under_half_the_sample_limit() -> None:
    assert chunk_ms(1000, 30_000, 50_000_000, 86_400_000) == 86_400_000
    assert chunk_ms(10_000, 30_000, 50_000_000, 86_400_000) == 2500 * 30_000
    assert chunk_ms(10**9, 30_000, 50_000_000, 86_400_000) == 30_000


def test_chunks_of_one_series_merge_into_one_id() -> None:
    a = {"__name__": "kube_pod_created", **POD}
    b = {"__name__": "kube_pod_info", **POD, "node": "n1"}
    first = Matrix([a, b], np.array([2, 1]), np.array([0, 30_000, 0]), np.array([1.0, 1.0, 1.0]))
    second = Matrix([a], np.array([1]), np.array([60_000]), np.array([1.0]))
    long = to_long([first, second])
    assert long.series.height == 2 and long.samples.schema == pl.Schema(SAMPLES_SCHEMA)
    assert long.samples.filter(pl.col("series_id") == 0).height == 3
    assert keep_metrics(long, ["kube_pod_info"]).samples.height == 1
