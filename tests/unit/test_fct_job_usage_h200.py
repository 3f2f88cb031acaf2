"""fct_job_usage on the real H200 trace: means, memory and energy per job match the CSV and README."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from tests.fixtures import h200
from tests.unit.fct_job_usage_cases import ACCOUNTS, GPU_MODELS, job
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.intermediate.int_gpu_minutes_attributed import int_gpu_minutes_attributed_sql
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.staging.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA
from warehouse import connect, replace_partition

# README table: means over each job, in %: GPU_UTIL, GR_ENGINE, SM_ACTIVE, tensor
README = {
    "capA-01-dense": (83, 82, 79, 76),
    "capA-03-hog": (0, 0.1, 0.1, 0),
    "capA-04-bursty": (0.9, 12, 9.6, 9),
    "capA-05-starved": (9.7, 9.9, 9.6, 0),
    "capA-06-tiny": (80, 80, 0.6, 0),
}


def h200_runs() -> pl.DataFrame:
    """One stg_slurm__jobs run per non-idle job of the trace, on the trace's host."""
    runs = h200.jobs().filter(pl.col("kind") != "idle")
    return pl.DataFrame(
        [
            job(r["job_id"], r["start"], r["end"], cluster=h200.CLUSTER, hosts=[h200.HOSTNAME], gpu_type=None)
            for r in runs.iter_rows(named=True)
        ],
        schema=JOBS_SCHEMA,
    )


@pytest.fixture(scope="module")
def h200_usage() -> pl.DataFrame:
    """The trace through the real path: minute rollup -> attribution SQL in DuckDB -> fct_job_usage."""
    period = (datetime(2026, 11, 1), datetime(2026, 12, 1))
    jobs = h200_runs()
    minutely = stg_dcgm__gpu_minutely(h200.raw_samples().lazy(), h200.STEP_SECONDS).collect()
    minutely = minutely.with_columns(day=pl.col("minute").dt.date())
    with connect(":memory:") as conn:
        replace_partition(
            conn,
            "staging.stg_slurm__jobs",
            jobs.with_columns(month=pl.lit(period[0].date())),
            {"month": period[0].date()},
        )
        for day in minutely.get_column("day").unique().to_list():
            replace_partition(
                conn, "staging.stg_dcgm__gpu_minutely", minutely.filter(pl.col("day") == day), {"day": day}
            )
        text, params = int_gpu_minutes_attributed_sql(
            h200.CLUSTER,
            period[0],
            period[0],
            period[1],
            h200.STEP_SECONDS,
            [h200.HOSTNAME],
            [1.0],
            0.01,
            sums_stored=False,
        )
        attributed = conn.sql(text, params=params).pl().cast(ATTRIBUTED_SCHEMA)
    return fct_job_usage(
        jobs=jobs,
        attributed=attributed,
        accounts=ACCOUNTS,
        gpu_models=GPU_MODELS,
        period_start=period[0],
        period_end=period[1],
        step_seconds=h200.STEP_SECONDS,
    )


def csv_means(job_id: str) -> dict[str, float]:
    """Means over the job's samples, straight from capA_samples.csv, as 0-1 ratios."""
    rows = h200.samples_csv().filter(pl.col("job_id") == job_id)
    return rows.select(
        (pl.col("gpu_util").mean() / 100).alias("mean_gpu_util"),
        (pl.col("gpm_graphics_util").mean() / 100).alias("mean_gr_engine_active"),
        (pl.col("gpm_sm_util").mean() / 100).alias("mean_sm_active"),
        (pl.col("gpm_any_tensor_util").mean() / 100).alias("mean_tensor_active"),
    ).row(0, named=True)


@pytest.mark.parametrize("job_id", list(README))
def test_h200_means_match_the_csv_and_the_readme(h200_usage: pl.DataFrame, job_id: str) -> None:
    row = h200_usage.filter(pl.col("job_id_raw") == job_id).row(0, named=True)
    expected = csv_means(job_id)
    assert row["utilization_signal"] == "sm_active"
    assert row["utilization"] == pytest.approx(expected["mean_sm_active"], abs=1e-12)
    for column, readme_percent in zip(expected, README[job_id], strict=True):
        assert row[column] == pytest.approx(expected[column], abs=1e-12), column
        assert row[column] == pytest.approx(readme_percent / 100, abs=0.01), column  # README rounds
    assert (row["attribution_method"], row["gpu_model"], row["hosts"]) == ("hpc_job_label", "H200", h200.HOSTNAME)


def test_h200_tiny_busy_by_gpu_util_idle_by_sm_active(h200_usage: pl.DataFrame) -> None:
    tiny = h200_usage.filter(pl.col("job_id_raw") == "capA-06-tiny").row(0, named=True)
    assert 0.004 < tiny["utilization"] < 0.01
    assert 0.7 < tiny["mean_gpu_util"] < 0.9
    # every sample's SM_ACTIVE is at most 1 %: all of its GPU-hours are zero-utilization hours
    assert tiny["zero_util_gpu_hours"] == pytest.approx(tiny["gpu_hours"])
    assert tiny["active_gpu_hours"] == pytest.approx(tiny["gpu_hours"] * tiny["utilization"])


def test_h200_bursty_idle_by_gpu_util_busy_by_sm_active(h200_usage: pl.DataFrame) -> None:
    bursty = h200_usage.filter(pl.col("job_id_raw") == "capA-04-bursty").row(0, named=True)
    assert bursty["mean_gpu_util"] < 0.02
    assert 0.08 < bursty["utilization"] < 0.12


def test_h200_samples_memory_and_energy_match_the_csv(h200_usage: pl.DataFrame) -> None:
    csv = h200.samples_csv().with_columns(pl.col("energy_mj").shift(1).alias("_prev"))
    for job_id in README:
        rows = csv.filter(pl.col("job_id") == job_id)
        got = h200_usage.filter(pl.col("job_id_raw") == job_id).row(0, named=True)
        assert got["n_samples"] == rows.height
        assert got["peak_fb_used_mib"] == rows.get_column("fb_used_bytes").max() / 2**20
        # mean power x sampled time (1 s samples) ...
        power_w = h200.raw_samples().filter(pl.col("hpc_job") == job_id).get_column("power_w")
        assert got["energy_kwh"] == pytest.approx(power_w.sum() * h200.STEP_SECONDS / 3.6e6, rel=1e-9)
        # ... agrees with the card's own energy counter within 2 %
        counter_mj = rows.get_column("energy_mj")[-1] - rows.get_column("_prev")[0]
        assert got["energy_kwh"] == pytest.approx(counter_mj / 3.6e9, rel=0.02)


def test_h200_the_trace_has_one_row_per_job_and_no_unattributed_job(h200_usage: pl.DataFrame) -> None:
    assert sorted(h200_usage.get_column("job_id_raw").to_list()) == sorted(
        h200_runs().get_column("job_id_raw").to_list()
    )
    assert set(h200_usage.get_column("attribution_method").to_list()) == {"hpc_job_label"}
