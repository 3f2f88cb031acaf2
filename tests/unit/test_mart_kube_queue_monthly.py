"""mart_kube_queue_monthly and its helpers on crafted samples: histogram quantiles on known
buckets, counter increases with a reset, pending, usage vs quota and borrowing, Volcano."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from sources.kube.landing import RAW_KUBE_QUEUE_SCHEMA
from transforms.helpers.kube_queue_stats import histogram_quantile, increase
from transforms.marts.mart_kube_queue_monthly import SCHEMA, mart_kube_queue_monthly

T0 = datetime(2026, 3, 2)
STEP = 60
KUEUE = {"admission_wait": "w", "pending_workloads": "pending", "resource_usage": "usage", "nominal_quota": "quota"}
INF = float("inf")


def test_histogram_quantile_interpolates_inside_the_bucket() -> None:
    bounds, counts = [1.0, 2.0, 4.0, 8.0, INF], [0.0, 10.0, 20.0, 40.0, 40.0]
    assert histogram_quantile(0.5, bounds, counts) == pytest.approx(4.0)  # rank 20 = top of (2, 4]
    assert histogram_quantile(0.25, bounds, counts) == pytest.approx(2.0)
    assert histogram_quantile(0.125, bounds, counts) == pytest.approx(1.5)  # rank 5 halfway in (1, 2]
    assert histogram_quantile(0.95, bounds, counts) == pytest.approx(4.0 + 4.0 * 18 / 20)
    assert histogram_quantile(0.99, [1.0, INF], [1.0, 10.0]) == 1.0  # +Inf bucket: the largest finite bound
    assert histogram_quantile(0.5, [1.0, INF], [0.0, 0.0]) is None
    assert histogram_quantile(0.5, [INF, 2.0, 1.0], [4.0, 4.0, 0.0]) == pytest.approx(1.5)  # any order


def test_increase_counts_a_reset_and_not_what_came_before_the_period() -> None:
    frame = pl.DataFrame(
        {
            "q": ["a"] * 4,
            "labels": ["{}"] * 4,
            "ts": [T0 + timedelta(minutes=i) for i in range(4)],
            "value": [5.0, 7.0, 1.0, 3.0],
        }
    )
    assert increase(frame, ["q"])["increase"].to_list() == [2.0 + 1.0 + 2.0]


def sample(metric: str, minute: int, value: float, queue: str = "cq", **labels: str) -> dict:
    labels = ({"cluster_queue": queue} if metric != "volcano" else {"queue": queue}) | labels
    return {
        "cluster": "c1",
        "day": T0.date(),
        "metric": metric,
        "queue": queue,
        "labels": json.dumps(labels, sort_keys=True),
        "ts": T0 + timedelta(minutes=minute),
        "value": value,
    }


def crafted() -> list[dict]:
    rows = []
    for minute in range(4):
        admitted = [0.0, 1.0, 2.0, 2.0][minute]
        rows += [sample("w_count", minute, admitted), sample("w_sum", minute, [0.0, 3.0, 13.0, 13.0][minute])]
        rows += [
            sample("w_bucket", minute, c, le=le)
            for le, c in (("1", 0.0), ("4", min(admitted, 1.0)), ("16", admitted), ("+Inf", admitted))
        ]
        rows += [
            sample("pending", minute, [2.0, 1.0, 0.0, 0.0][minute], status="active"),
            sample("pending", minute, 1.0, status="inadmissible"),
        ]
        usage = [8.0, 16.0, 20.0, 12.0][minute]
        rows += [
            sample("usage", minute, usage, resource="nvidia.com/gpu", flavor="f"),
            sample("usage", minute, 99.0, resource="cpu", flavor="f"),
            sample("quota", minute, 16.0, resource="nvidia.com/gpu", flavor="f"),
        ]
    rows += [sample("volcano", m, 90_000.0, queue="vq", job_name="j1") for m in range(2)]
    rows += [sample("volcano", 3, 30_000.0, queue="vq", job_name="j2")]
    return rows


def mart(rows: list[dict]) -> pl.DataFrame:
    return mart_kube_queue_monthly(
        pl.DataFrame(rows, schema=RAW_KUBE_QUEUE_SCHEMA), date(2026, 3, 1), STEP, KUEUE, "volcano"
    )


def test_kueue_queue_row_waits_pending_and_borrowing() -> None:
    out = mart(crafted())
    assert out.schema == pl.Schema(SCHEMA)
    row = out.filter(pl.col("queue_kind") == "kueue").row(0, named=True)
    assert row["queue"] == "cq" and row["admitted_workloads"] == 2
    assert row["admission_wait_mean_seconds"] == pytest.approx(6.5)
    assert row["admission_wait_p50_seconds"] == pytest.approx(4.0)  # rank 1: top of (1, 4]
    assert row["admission_wait_p95_seconds"] == pytest.approx(4.0 + 12.0 * 0.9)  # rank 1.9 in (4, 16]
    assert row["pending_workloads_mean"] == pytest.approx(1.75) and row["pending_workloads_max"] == 3.0
    assert row["gpu_nominal_quota"] == 16.0 and row["gpu_usage_peak"] == 20.0 and row["gpu_usage_mean"] == 14.0
    assert row["usage_share_peak"] == pytest.approx(1.25) and row["usage_share_mean"] == pytest.approx(14 / 16)
    assert row["borrowed_gpu_hours"] == pytest.approx(4.0 * STEP / 3600)  # only the 20 > 16 scrape
    assert row["scheduled_jobs"] is None


def test_no_borrowing_at_the_quota_and_volcano_jobs_once() -> None:
    rows = [r for r in crafted() if not (r["metric"] == "usage" and r["value"] == 20.0)]
    out = mart(rows)
    assert out.filter(pl.col("queue_kind") == "kueue")["borrowed_gpu_hours"].to_list() == [0.0]
    volcano = out.filter(pl.col("queue_kind") == "volcano").row(0, named=True)
    assert volcano["queue"] == "vq" and volcano["scheduled_jobs"] == 2
    assert volcano["scheduling_duration_mean_seconds"] == pytest.approx(60.0)
    assert volcano["scheduling_duration_max_seconds"] == pytest.approx(90.0)
    assert volcano["admitted_workloads"] is None


def test_rows_without_a_queue_are_left_out_and_empty_input_gives_no_rows() -> None:
    rows = [sample("pending", 0, 1.0) | {"queue": None}]
    assert mart(rows).is_empty()
    assert mart([]).is_empty()
