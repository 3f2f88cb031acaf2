"""One end-to-end run: simulate a month, run it through Dagster, check numbers against the truth."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from tests.support.warehouse_read import read, table_digests

pytestmark = [pytest.mark.slow]

MONTH = "2026-10"


@pytest.fixture(scope="module")
def month_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("e2e")
    runner = CliRunner()
    sim = runner.invoke(
        app,
        [
            "simulate",
            "--out",
            str(root / "sim"),
            "--gpus",
            "16",
            "--days",
            "31",
            "--start",
            "2026-10-01",
            "--seed",
            "11",
            "--step",
            "300",
            "--metrics-format",
            "parquet",
        ],
    )
    assert sim.exit_code == 0, sim.output
    config = root / "sim" / "cardhours.toml"
    first = runner.invoke(app, ["run", "--config", str(config), "--month", MONTH])
    assert first.exit_code == 0, first.output
    database = next((root / "sim").glob("*.duckdb"))
    snapshot = table_digests(database)
    # every day read again and rewritten: partition writes are idempotent
    second = runner.invoke(app, ["run", "--config", str(config), "--month", MONTH, "--reingest", "all"])
    assert second.exit_code == 0, second.output
    return {"root": root, "config": config, "database": database, "first": snapshot, "output": first.output}


def test_outputs_are_printed_and_written(month_run: dict) -> None:
    review = month_run["root"] / "sim" / "reports" / MONTH / "review.html"
    assert review.is_file()
    assert str(review) in month_run["output"].replace("\n", "")
    html = review.read_text()
    assert html.count("<html") == 1
    month_dir = review.parent
    printed = month_run["output"].replace("\n", "")
    for name in ("flagged_jobs.csv", "chargeback_focus.csv", "chargeback_focus.parquet", "chargeback_jobs.csv"):
        assert (month_dir / name).is_file(), name
        assert str(month_dir / name) in printed, name
    assert f"pages in {month_dir / 'departments'}" in printed
    assert list((month_dir / "departments").glob("*.html")), "no department pages"
    index = month_dir.parent / "index.html"  # rewritten after the month's files, by the same run
    assert str(index) in printed
    listed = index.read_text()
    for name in ("review.html", "flagged_jobs.csv", "chargeback_focus.csv", "chargeback_focus.parquet"):
        assert f'href="{MONTH}/{name}"' in listed, name


def test_rerun_gives_identical_rows(month_run: dict) -> None:
    assert table_digests(month_run["database"]) == month_run["first"]


def test_gpu_hours_match_truth(month_run: dict) -> None:
    truth = pl.read_parquet(month_run["root"] / "sim" / "truth.parquet")
    usage = read(month_run["database"], "SELECT * FROM marts.fct_job_usage")
    expected = truth["gpu_seconds"].sum() / 3600
    assert usage["gpu_hours"].sum() == pytest.approx(expected, rel=1e-9)
    departments = read(month_run["database"], "SELECT * FROM marts.mart_department_monthly WHERE NOT is_unallocated")
    assert departments["gpu_hours"].sum() == pytest.approx(expected, rel=1e-9)


def test_gpu_hours_match_truth_per_job_to_the_second(month_run: dict) -> None:
    truth = pl.read_parquet(month_run["root"] / "sim" / "truth.parquet").filter(pl.col("start_time").is_not_null())
    usage = read(month_run["database"], "SELECT * FROM marts.fct_job_usage WHERE start_time IS NOT NULL")
    joined = truth.join(usage, on=["job_id_raw", "start_time"], how="full", coalesce=True)
    assert joined.height == truth.height == usage.height
    seconds = (joined["gpu_hours"] * 3600 - joined["gpu_seconds"]).abs()
    assert seconds.max() < 1.0


def test_utilization_matches_true_sm_activity(month_run: dict) -> None:
    truth = pl.read_parquet(month_run["root"] / "sim" / "truth.parquet").filter(pl.col("n_samples") > 0)
    usage = read(month_run["database"], "SELECT * FROM marts.fct_job_usage WHERE n_samples > 0")
    joined = truth.join(usage, left_on=["job_id_raw", "start_time"], right_on=["job_id_raw", "start_time"])
    assert joined.height == truth.height == usage.height
    error = (joined["utilization"] - joined["true_mean_sm_active"]).abs()
    # Within 1 %, or one sample's worth: a run starting in a clock hour whose samples on its GPU
    # are all unlabelled (started seconds after a sample, first label the next hour) takes its
    # share of that sample by host-level attribution (int_gpu_minutes_attributed).
    assert (error <= (1.0 / joined["n_samples"]).clip(lower_bound=0.01)).all()
    assert (joined["utilization_signal"] == "sm_active").all()
    assert (joined["attribution_method"] == "hpc_job_label").all()


def test_sample_coverage_counts_against_the_simulated_step(month_run: dict) -> None:
    """The simulator writes 300 s samples here and says so in the config it writes: jobs
    that ran a whole number of steps are fully covered, the cluster nearly so."""
    config = (month_run["root"] / "sim" / "cardhours.toml").read_text()
    assert "step_seconds = 300" in config
    cluster = read(month_run["database"], "SELECT sample_coverage FROM marts.mart_cluster_monthly").row(0)
    assert 0.95 <= cluster[0] <= 1.0
    hourly = read(month_run["database"], "SELECT expected_samples FROM marts.fct_gpu_hourly")
    assert (hourly["expected_samples"] == 12).all()


def test_jobs_without_samples_are_reported(month_run: dict) -> None:
    truth = pl.read_parquet(month_run["root"] / "sim" / "truth.parquet")
    usage = read(month_run["database"], "SELECT * FROM marts.fct_job_usage")
    none = usage.filter(pl.col("n_samples") == 0)
    assert none.height == truth.filter(pl.col("n_samples") == 0).height
    assert (none["attribution_method"] == "none").all() and none["utilization"].is_null().all()


def test_gpu_hourly_is_consistent_with_jobs_capacity_and_samples(month_run: dict) -> None:
    database = month_run["database"]
    hourly = read(database, "SELECT * FROM marts.fct_gpu_hourly")
    usage = read(database, "SELECT gpu_hours FROM marts.fct_job_usage")
    samples = read(database, "SELECT count(*) AS n FROM raw.dcgm_samples").item()
    assert hourly.height == 16 * 31 * 24
    assert hourly["capacity_seconds"].sum() == pytest.approx(16 * 31 * 24 * 3600)
    assert hourly["allocated_seconds"].sum() / 3600 == pytest.approx(usage["gpu_hours"].sum(), rel=1e-9)
    assert (hourly["allocated_seconds"] <= hourly["capacity_seconds"] + 1e-6).all()
    assert hourly["n_samples"].sum() == samples
    assert hourly["unattributed_samples"].sum() == 0
    busy = hourly.filter(pl.col("active_seconds").is_not_null())
    assert busy.height > 0 and (busy["active_seconds"] <= busy["allocated_seconds"] + 1e-6).all()


def test_unmapped_account_is_reported_not_dropped(month_run: dict) -> None:
    departments = read(month_run["database"], "SELECT department, gpu_hours FROM marts.mart_department_monthly")
    assert "unmapped" in departments["department"].to_list()


def test_cluster_headline_is_consistent(month_run: dict) -> None:
    cluster = read(month_run["database"], "SELECT * FROM marts.mart_cluster_monthly").row(0, named=True)
    assert cluster["month"] == date(2026, 10, 1)
    assert cluster["capacity_gpu_hours"] == pytest.approx(16 * 31 * 24)
    assert 0.2 < cluster["allocation_ratio"] < 1.0
    assert cluster["allocated_gpu_hours"] + cluster["infra_idle_gpu_hours"] == pytest.approx(
        cluster["capacity_gpu_hours"]
    )


@pytest.mark.integration
def test_review_renders_in_chromium_offline(month_run: dict, tmp_path: Path) -> None:
    from tests.support.browser import load_page

    review = month_run["root"] / "sim" / "reports" / MONTH / "review.html"
    page = load_page(review, tmp_path / "review.png")
    assert page.console_errors == [] and page.page_errors == []
    assert [url for url in page.requests if not url.startswith("file:")] == []  # works offline
    assert page.plots_rendered == review.read_text().count("Plotly.newPlot(") >= 2
    assert page.screenshot is not None and page.screenshot.stat().st_size > 20_000
    assert "unmapped" in page.text
    assert "All reconciliation checks pass" in page.text  # the chargeback section of the review
    departments = sorted((review.parent / "departments").glob("*.html"))
    for department in departments[:2]:
        sub = load_page(department, tmp_path / f"{department.stem}.png")
        assert sub.console_errors == [] and sub.page_errors == [], department.name
        assert [url for url in sub.requests if not url.startswith("file:")] == []
        assert sub.plots_rendered == department.read_text().count("Plotly.newPlot(") >= 1, department.name


def test_each_mart_is_also_parquet_for_bi_tools(month_run: dict) -> None:
    """Every mart of the month, in the lake as ``marts/<table>/<period>=<first day>/part-0.parquet``,
    holding exactly the DuckDB table's rows of that month."""
    from config import load_config
    from pipelines.tables import TABLES as REGISTRY

    lake = load_config(month_run["config"]).warehouse.lake
    marts = [table for table in REGISTRY if table.parquet]
    assert len(marts) == 12
    for table in marts:
        files = sorted((lake / "marts" / table.name.split(".")[1]).glob("*/*.parquet")) or sorted(
            (lake / "marts" / table.name.split(".")[1]).glob("*/*/*.parquet")
        )
        assert files, table.name
        key = table.period
        stored = read(month_run["database"], f"SELECT * EXCLUDE ({key}) FROM {table.name} WHERE {key} = '2026-10-01'")
        if table.name.startswith("marts.fct_chargeback"):
            stored = stored.drop("billing_month")
        parquet = pl.read_parquet(files[-1], hive_partitioning=False)
        assert parquet.columns == stored.columns, table.name
        assert parquet.sort(parquet.columns, nulls_last=True).equals(stored.sort(stored.columns, nulls_last=True))
