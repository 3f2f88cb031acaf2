"""The real H200 trace, back-filled into a real Prometheus, comes back exactly through cardhours' ingest.

Back-filled series carry no staleness markers, so a ``query_range`` repeats each series'
last value for up to 5 minutes after it ends, e.g. after ``hpc_job`` changes to the next
job. The ingest reads raw samples: one per second, each under its job, nothing invented.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import requests
from polars.testing import assert_frame_equal

from contracts.schemas import SAMPLE_VALUE_COLUMNS
from tests.fixtures import h200
from tests.fixtures.dcgm_openmetrics import h200_trace_om
from tests.fixtures.prom_config import prometheus_source
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COMPARED = ["ts", "hpc_job", *SAMPLE_VALUE_COLUMNS]


def epoch(moment: datetime) -> float:
    return (moment - datetime(1970, 1, 1)).total_seconds()


def window() -> tuple[datetime, datetime]:
    """Whole hours around the trace: minutes of nothing before and after it."""
    ts = h200.raw_samples()["ts"]
    start = ts.min().replace(minute=0, second=0, microsecond=0)
    return start, ts.max().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)


@pytest.fixture(scope="module")
def trace_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The trace as dcgm-exporter series, per host label spelling."""
    root = tmp_path_factory.mktemp("h200")
    return {style: h200_trace_om(root / f"h200-{style}.om", label_style=style) for style in ("Hostname", "hostname")}


@pytest.fixture(scope="module", params=["Hostname", "hostname"])
def served(request: pytest.FixtureRequest, prometheus_with, trace_files: dict[str, Path]) -> tuple[str, str]:
    return prometheus_with([trace_files[request.param]]), request.param


def read(url: str, **prometheus) -> pl.DataFrame:
    source = prometheus_source(url, cluster=h200.CLUSTER, step_seconds=1, scrape_interval_seconds=1, **prometheus)
    return source.read_samples(h200.CLUSTER, *window())


def per_job(samples: pl.DataFrame, step_seconds: int) -> pl.DataFrame:
    """Per hpc_job through stg_dcgm__gpu_hourly: mean best signal (sm_active), mean GPU_UTIL
    (ratio), peak FB used, energy (mJ) and samples."""
    hourly = stg_dcgm__gpu_hourly(samples.lazy(), step_seconds).collect()
    return (
        hourly.group_by("hpc_job")
        .agg(
            (pl.col("sm_active_sum").sum() / pl.col("sm_active_n").sum()).alias("sm_active"),
            (pl.col("gpu_util_sum").sum() / pl.col("gpu_util_n").sum()).alias("gpu_util"),
            pl.col("fb_used_mib_max").max().alias("fb_used_mib_max"),
            pl.col("energy_delta_mj").sum().alias("energy_mj"),
            pl.col("n_samples").sum().alias("n_samples"),
        )
        .sort("hpc_job", nulls_last=True)
    )


def test_every_captured_sample_once_under_its_job(served: tuple[str, str]) -> None:
    url, style = served
    got = read(url)
    expected = h200.raw_samples()
    assert got.height == expected.height  # one row per captured second, none invented
    assert_frame_equal(got.sort("ts").select(COMPARED), expected.select(COMPARED))
    assert got.sort("ts")["ts"].diff().drop_nulls().unique().to_list() == [timedelta(seconds=1)]
    assert set(got["hostname"]) == {h200.HOSTNAME}  # from either host label spelling
    assert set(got["uuid"]) == {h200.device()["uuid"]} and set(got["gpu"]) == {0}
    assert '"DCGM_FI_DRIVER_VERSION":"580.159.04"' in got["extra_labels"][0]
    for job in h200.jobs().filter(pl.col("kind") != "idle").iter_rows(named=True):
        mine = got.filter(pl.col("hpc_job") == job["job_id"])
        assert mine["ts"].min() >= job["start"] and mine["ts"].max() < job["end"], job["job_id"]
        assert mine.height == expected.filter(pl.col("hpc_job") == job["job_id"]).height


def test_query_range_would_invent_samples_after_a_label_change(served: tuple[str, str]) -> None:
    """The staleness problem is real on this server: a naive query_range keeps a finished job's
    series alive for minutes; the ingest above must not (and does not) do that."""
    url, _ = served
    start, end = window()
    answer = requests.get(
        f"{url}/api/v1/query_range",
        timeout=60,
        params={
            "query": 'DCGM_FI_DEV_GPU_UTIL{hpc_job="capA-01-dense"}',
            "start": epoch(start),
            "end": epoch(end),
            "step": "1",
        },
    ).json()
    points = answer["data"]["result"][0]["values"]
    _, job_end = h200.job_window("capA-01-dense")
    after = [t for t, _ in points if t >= epoch(job_end)]
    assert len(after) > 60  # repeated long after the job's last sample


def test_derived_facts_hold_through_staging(served: tuple[str, str]) -> None:
    url, _ = served
    jobs = per_job(read(url), step_seconds=1)
    assert_frame_equal(jobs, per_job(h200.raw_samples(), step_seconds=1))
    kinds = dict(h200.jobs().select("job_id", "kind").iter_rows())
    facts = {kinds[row["hpc_job"]]: row for row in jobs.drop_nulls("hpc_job").iter_rows(named=True)}
    assert facts["tiny"]["gpu_util"] > 0.7 and facts["tiny"]["sm_active"] < 0.02  # busy bit, one SM
    assert facts["bursty"]["gpu_util"] < 0.05 and facts["bursty"]["sm_active"] > 0.05  # bursts missed
    assert facts["hog"]["fb_used_mib_max"] > 50_000 and facts["hog"]["sm_active"] < 0.01


def accuracy(exact: pl.DataFrame, approx: pl.DataFrame) -> pl.DataFrame:
    """Per job: the downsampled value's error against the exact one (points for ratios, % else)."""
    joined = exact.join(approx, on="hpc_job", suffix="_ds").drop_nulls("hpc_job")
    return joined.select(
        "hpc_job",
        ((pl.col("sm_active_ds") - pl.col("sm_active")) * 100).alias("sm_active_pts"),
        ((pl.col("gpu_util_ds") - pl.col("gpu_util")) * 100).alias("gpu_util_pts"),
        ((pl.col("fb_used_mib_max_ds") / pl.col("fb_used_mib_max") - 1) * 100).alias("fb_max_pct"),
        ((pl.col("energy_mj_ds") / pl.col("energy_mj") - 1) * 100).alias("energy_pct"),
    )


def test_downsampling_accuracy_on_the_h200_trace(prometheus_with, trace_files: dict[str, Path]) -> None:
    """Server-side downsampling vs every raw sample, per job (pytest -s prints the table
    that docs/prometheus.md quotes)."""
    url = prometheus_with([trace_files["Hostname"]])
    exact = per_job(read(url), step_seconds=1)
    rows = []
    for step in (15, 60, 300):
        errors = accuracy(exact, per_job(read(url, downsample_seconds=step), step_seconds=step))
        worst = errors.select(pl.exclude("hpc_job").abs().max()).row(0, named=True)
        rows.append({"downsample_s": step, **{k: round(v, 2) for k, v in worst.items()}})
        print(f"\ndownsample {step} s, per job:\n{errors}")
    table = pl.DataFrame(rows)
    print(f"\nworst absolute error over the trace's jobs:\n{table}")
    assert table["fb_max_pct"].max() == 0.0  # max_over_time keeps the peak exactly
    # Job means: each step point weighs as much as a full step, so a job's partial first and
    # last steps are over-weighted; on these 30-42 s jobs that costs at most ~5 points.
    assert table["sm_active_pts"].max() <= 5.0 and table["gpu_util_pts"].max() <= 5.0
    assert table["energy_pct"].max() == 0.0  # the counter is read raw (next test)


def test_downsampled_energy_per_job_is_the_raw_energy(prometheus_with, trace_files: dict[str, Path]) -> None:
    """Every job here is shorter than a minute: at a 60 s step hpc_job changes inside most
    buckets, and the idle series has readings on both sides of a job inside one. The energy
    counter is read raw even when downsampling, so each job's energy (and the idle time's)
    through stg_dcgm__gpu_hourly is exactly the raw samples' energy."""
    url = prometheus_with([trace_files["Hostname"]])
    exact = per_job(h200.raw_samples(), step_seconds=1).select("hpc_job", "energy_mj")
    assert exact["energy_mj"].min() > 1e6 and exact.height == 6  # five jobs and the idle time
    assert_frame_equal(per_job(read(url), step_seconds=1).select("hpc_job", "energy_mj"), exact)
    got = read(url, downsample_seconds=60)
    assert_frame_equal(per_job(got, step_seconds=60).select("hpc_job", "energy_mj"), exact)
    # One row per series and minute: at the minute's start where one series was read in it,
    # else at the series' last reading in it. Plus one row with only an energy reading: the end
    # of the idle readings before the first job, in the minute where idle time resumes after it.
    assert got.filter(pl.col("power_w").is_null()).select("ts", "hpc_job", "energy_mj").rows() == [
        (datetime(2026, 11, 30, 1, 15, 4, 548000), None, 2889645.0)
    ]
    rows = got.filter(pl.col("power_w").is_not_null())
    assert rows.select("hpc_job", pl.col("ts").dt.truncate("1m")).is_duplicated().sum() == 0
