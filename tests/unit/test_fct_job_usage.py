"""fct_job_usage: job runs x attributed DCGM minutes -> GPU-hours, utilization, idle, energy per run."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.fixtures import h200
from transforms import fct_job_usage as fct_module
from transforms import mart_department_monthly, stg_dcgm__gpu_hourly, stg_slurm__jobs
from transforms.fct_job_usage import SCHEMA, fct_job_usage
from transforms.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.int_gpu_minutes_attributed import int_gpu_minutes_attributed_sql
from transforms.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely
from transforms.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA
from warehouse import connect, replace_partition


MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
APRIL = (datetime(2024, 4, 1), datetime(2024, 5, 1))
ACCOUNTS = pl.DataFrame(
    {
        "cluster": ["c1", "h200"],
        "account": ["physics", "physics"],
        "department": ["phys", "phys"],
        "department_name": ["Physics", "Physics"],
        "division": ["sci", "sci"],
        "division_name": ["Science", "Science"],
    }
)
GPU_MODELS = pl.DataFrame(
    {
        "cluster": ["c1", "c1", "c1", "h200"],
        "hostname": ["n1", "n2", "m1", h200.HOSTNAME],
        "gpu_model": ["H100", "H100", "A100", "H200"],
    }
)


def job(job_id_raw: str, start: datetime | None, end: datetime | None, **fields) -> dict:
    """A stg_slurm__jobs row: 1 H100 on n1, account physics, submitted/eligible an hour before start."""
    submit = (start or datetime(2024, 3, 10)) - timedelta(hours=1)
    row = {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1", "scheduler": "slurm", "job_id": job_id_raw, "job_id_raw": job_id_raw,
        "job_name": "train", "user_name": "alice", "account": "physics", "partition_name": "gpu",
        "qos": "normal", "state": "COMPLETED" if end else "RUNNING", "submit_time": submit,
        "eligible_time": submit + timedelta(minutes=30), "start_time": start, "end_time": end,
        "is_open": start is not None and end is None, "gpus": 1.0, "gpu_slots": 1, "gpu_type": "h100",
        "is_mig": False, "n_nodes": 1, "hosts": ["n1"], "n_steps": 1,
    }
    return row | fields


def hour(hpc_job: str | None, at: datetime, start_time: datetime | None = None, n: int = 60,
         method: str = "hpc_job_label", **fields) -> dict:
    """An int_gpu_minutes_attributed row: ``n`` samples of n1 GPU 0 in the hour at ``at`` tied to
    the run of ``hpc_job`` that started at ``start_time`` (default: the hour); sums via fields."""
    row = {c: (0.0 if c.endswith(("_n", "_sum")) else None) for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1", "hostname": "n1", "gpu": 0, "hour": at, "job_id_raw": hpc_job,
        "start_time": start_time if start_time is not None or hpc_job is None else at, "attribution_method": method, "samples": float(n), "zero_samples": 0.0,
    }
    return row | fields


def sm(value: float, n: int = 60) -> dict:
    """Attributed fields for ``n`` samples whose sm_active (the best signal) is ``value``."""
    return {"sm_active_sum": value * n, "sm_active_n": float(n), "best_sum": value * n, "best_n": float(n)}


def fct(jobs: list[dict], hours: list[dict], period=MARCH, step_seconds: int = 60) -> pl.DataFrame:
    return fct_job_usage(
        jobs=pl.DataFrame(jobs, schema=JOBS_SCHEMA),
        attributed=pl.DataFrame(hours, schema=ATTRIBUTED_SCHEMA),
        accounts=ACCOUNTS,
        gpu_models=GPU_MODELS,
        period_start=period[0],
        period_end=period[1],
        step_seconds=step_seconds,
    )


# --- the real H200 trace -------------------------------------------------------------

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
        [job(r["job_id"], r["start"], r["end"], cluster=h200.CLUSTER, hosts=[h200.HOSTNAME], gpu_type=None)
         for r in runs.iter_rows(named=True)],
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
        replace_partition(conn, "staging.stg_slurm__jobs", jobs.with_columns(month=pl.lit(period[0].date())),
                          {"month": period[0].date()})
        for day in minutely.get_column("day").unique().to_list():
            replace_partition(conn, "staging.stg_dcgm__gpu_minutely", minutely.filter(pl.col("day") == day), {"day": day})
        text, params = int_gpu_minutes_attributed_sql(
            h200.CLUSTER, period[0], period[0], period[1], h200.STEP_SECONDS, [h200.HOSTNAME], [1.0], 0.01
        )
        attributed = conn.sql(text, params=params).pl().cast(ATTRIBUTED_SCHEMA)
    return fct_job_usage(
        jobs=jobs, attributed=attributed, accounts=ACCOUNTS, gpu_models=GPU_MODELS,
        period_start=period[0], period_end=period[1], step_seconds=h200.STEP_SECONDS,
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
    assert sorted(h200_usage.get_column("job_id_raw").to_list()) == sorted(h200_runs().get_column("job_id_raw").to_list())
    assert set(h200_usage.get_column("attribution_method").to_list()) == {"hpc_job_label"}


# --- clipping, attribution, derived measures ----------------------------------------


def test_run_crossing_the_month_boundary_is_prorated() -> None:
    start, end = datetime(2024, 3, 31, 23), datetime(2024, 4, 1, 2)
    jobs = [job("9", start, end, gpus=2.0, gpu_slots=2)]
    hours = [hour("9", start, gpu=g, **sm(0.5)) for g in (0, 1)]
    hours += [hour("9", datetime(2024, 4, 1, h), start, gpu=g, **sm(0.1)) for h in (0, 1) for g in (0, 1)]
    march, april = fct(jobs, hours, MARCH), fct(jobs, hours, APRIL)
    assert march.select("elapsed_seconds", "gpu_hours", "n_samples", "expected_samples", "month").row(0) == (
        3600, 2.0, 120, 120.0, date(2024, 3, 1)
    )
    assert march.get_column("utilization")[0] == pytest.approx(0.5)
    assert april.select("elapsed_seconds", "gpu_hours", "n_samples", "month").row(0) == (7200, 4.0, 240, date(2024, 4, 1))
    assert april.get_column("utilization")[0] == pytest.approx(0.1)


def test_open_run_counts_up_to_period_end() -> None:
    out = fct([job("9", datetime(2024, 3, 31, 22), None)], [])
    assert out.select("is_open", "elapsed_seconds", "gpu_hours").row(0) == (True, 7200, 2.0)


def test_requeued_runs_get_their_own_hours() -> None:
    first = job("500", datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 10, 30), state="REQUEUED")
    second = job("500", datetime(2024, 3, 10, 12), datetime(2024, 3, 10, 13))
    hours = [hour("500", datetime(2024, 3, 10, 10), n=30, **sm(0.2, 30)), hour("500", datetime(2024, 3, 10, 12), **sm(0.8)),
             hour("500", datetime(2024, 3, 10, 11), datetime(2024, 3, 10, 11), **sm(0.9))]  # no such run
    out = fct([first, second], hours).sort("start_time")
    assert out.get_column("n_samples").to_list() == [30, 60]
    assert out.get_column("utilization").to_list() == pytest.approx([0.2, 0.8])


def test_only_the_runs_own_attributed_rows_count() -> None:
    start = datetime(2024, 3, 10, 10, 30)
    run = job("9", start, datetime(2024, 3, 10, 12))
    hours = [
        hour("9", datetime(2024, 3, 10, 10), start, **sm(0.4)),
        hour("9", datetime(2024, 3, 10, 11), start, method="host_shared", **sm(0.4)),
        hour("9", datetime(2024, 3, 10, 11), datetime(2024, 3, 10, 9), **sm(0.9)),  # another run of the job
        hour("10", datetime(2024, 3, 10, 11), start, **sm(0.9)),  # another job
        hour("9", datetime(2024, 3, 10, 11), start, cluster="c2", **sm(0.9)),  # another cluster
        hour(None, datetime(2024, 3, 10, 11), None, method="unallocated", **sm(0.9)),
        hour("9", datetime(2024, 4, 1, 0), start, **sm(0.9)),  # outside the period
    ]
    out = fct([run], hours)
    assert out.select("n_samples", "attribution_method").row(0) == (120, "hpc_job_label")
    assert out.get_column("utilization")[0] == pytest.approx(0.4)


@pytest.mark.parametrize(("methods", "best"), [(["host_shared", "host_exclusive"], "host_exclusive"),
                                              (["host_shared"], "host_shared"),
                                              (["host_shared", "hpc_job_label"], "hpc_job_label")])
def test_the_runs_method_is_the_best_among_its_samples(methods: list[str], best: str) -> None:
    start = datetime(2024, 3, 10, 10)
    hours = [hour("9", start + timedelta(hours=i), start, method=m, **sm(0.5)) for i, m in enumerate(methods)]
    out = fct([job("9", start, start + timedelta(hours=3))], hours)
    assert out.get_column("attribution_method").to_list() == [best]


def test_host_shared_fractional_samples_round_and_weight_the_means() -> None:
    start = datetime(2024, 3, 10, 10)
    hours = [hour("9", start, start, n=0, method="host_shared", samples=22.5, best_sum=2.25, best_n=22.5,
                  sm_active_sum=2.25, sm_active_n=22.5, zero_samples=4.5)]
    row = fct([job("9", start, start + timedelta(hours=1))], hours).row(0, named=True)
    assert (row["n_samples"], row["utilization"]) == (22, pytest.approx(0.1))
    assert row["zero_util_gpu_hours"] == pytest.approx(0.2)


def test_array_and_het_parts_are_kept() -> None:
    start = datetime(2024, 3, 10, 10)
    runs = [job("12", start, start + timedelta(hours=1), job_id="10_2", array_job_id="10", array_task_id="2"),
            job("20", start, start + timedelta(hours=1), job_id="20+1", het_job_id="20", het_offset=1)]
    out = fct(runs, []).sort("job_id_raw")
    assert out.select("job_id", "array_job_id", "array_task_id", "het_job_id", "het_offset").rows() == [
        ("10_2", "10", "2", None, None), ("20+1", None, None, "20", 1)
    ]


def test_pending_run_has_no_hours_and_no_utilization() -> None:
    pending = job("9", None, None, submit_time=datetime(2024, 3, 10), eligible_time=datetime(2024, 3, 10), hosts=[])
    out = fct([pending], [hour("9", datetime(2024, 3, 10), **sm(0.5))])
    row = out.row(0, named=True)
    assert (row["elapsed_seconds"], row["gpu_hours"], row["n_samples"], row["expected_samples"]) == (0, 0.0, 0, 0.0)
    for column in ("utilization", "utilization_signal", "active_gpu_hours", "idle_gpu_hours", "zero_util_gpu_hours",
                   "queue_seconds", "submit_wait_seconds", "sample_coverage", "energy_kwh", "gpu_model"):
        assert row[column] is None, column
    assert (row["attribution_method"], row["is_open"]) == ("none", False)


def test_started_run_without_samples_has_null_utilization_and_none_attribution() -> None:
    out = fct([job("9", datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 11))], [])
    assert out.select("gpu_hours", "utilization", "active_gpu_hours", "attribution_method", "sample_coverage").row(0) == (
        1.0, None, None, "none", 0.0
    )


def test_derived_measures() -> None:
    start = datetime(2024, 3, 10, 10)
    run = job("9", start, start + timedelta(hours=2), gpus=2.0, gpu_slots=2, hosts=["n1", "n2"],
              submit_time=start - timedelta(minutes=50), eligible_time=start - timedelta(minutes=20))
    common = dict(zero_samples=15, energy_j=1.8e6, fb_used_mib_sum=60 * 1000.0, fb_used_mib_n=60,
                  gpu_util_sum=30.0, gpu_util_n=60, tensor_active_sum=6.0, tensor_active_n=60, **sm(0.25))
    hours = [hour("9", start + timedelta(hours=h), start, fb_used_mib_max=1000.0 + h, **common) for h in (0, 1)]
    row = fct([run], hours, step_seconds=30).row(0, named=True)
    assert row["gpu_hours"] == 4.0
    assert row["utilization"] == pytest.approx(0.25)
    assert row["active_gpu_hours"] == pytest.approx(1.0)
    assert row["idle_gpu_hours"] == pytest.approx(3.0)
    assert row["zero_util_gpu_hours"] == pytest.approx(4.0 * 30 / 120)
    assert (row["mean_gpu_util"], row["mean_tensor_active"], row["mean_sm_active"]) == pytest.approx((0.5, 0.1, 0.25))
    assert (row["peak_fb_used_mib"], row["mean_fb_used_mib"]) == (1001.0, 1000.0)
    assert row["energy_kwh"] == pytest.approx(1.0)
    assert (row["queue_seconds"], row["submit_wait_seconds"]) == (1200, 3000)
    assert (row["n_samples"], row["expected_samples"]) == (120, 2 * 7200 / 30)
    assert row["sample_coverage"] == pytest.approx(120 / 480)
    assert (row["hosts"], row["gpu_model"]) == ("n1,n2", "H100")


def test_coverage_is_capped_at_one() -> None:
    start = datetime(2024, 3, 10, 10)
    out = fct([job("9", start, start + timedelta(minutes=30))], [hour("9", start, n=60, **sm(0.5, 60))])
    assert out.get_column("sample_coverage").to_list() == [1.0]


@pytest.mark.parametrize(
    ("fields", "signal", "value"),
    [
        ({**sm(0.3), "gr_engine_active_sum": 48.0, "gr_engine_active_n": 60, "gpu_util_sum": 54.0, "gpu_util_n": 60},
         "sm_active", 0.3),
        ({"gr_engine_active_sum": 48.0, "gr_engine_active_n": 60, "gpu_util_sum": 54.0, "gpu_util_n": 60},
         "gr_engine_active", 0.8),
        ({"gpu_util_sum": 54.0, "gpu_util_n": 60}, "gpu_util", 0.9),
    ],
)
def test_utilization_uses_the_best_signal_present(fields: dict, signal: str, value: float) -> None:
    start = datetime(2024, 3, 10, 10)
    out = fct([job("9", start, start + timedelta(hours=1))], [hour("9", start, **fields)])
    assert out.get_column("utilization_signal").to_list() == [signal]
    assert out.get_column("utilization")[0] == pytest.approx(value)


def test_departments_and_mig_models() -> None:
    start, end = datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 17)
    runs = [
        job("1", start, end),
        job("2", start, end, account="nobody"),
        job("3", start, end, gpus=3 / 7, gpu_slots=1, gpu_type="3g.40gb", is_mig=True, hosts=["m1"]),
    ]
    out = fct(runs, []).sort("job_id_raw")
    assert out.select("department", "division").rows() == [("phys", "sci"), ("unmapped", "unmapped"), ("phys", "sci")]
    assert out.get_column("gpu_model").to_list() == ["H100", "H100", "A100 3g.40gb"]
    assert out.get_column("gpu_hours").to_list() == pytest.approx([7.0, 7.0, 3.0])


def test_output_schema_is_exact() -> None:
    assert fct([job("9", datetime(2024, 3, 10), None)], []).schema == pl.Schema(SCHEMA)
    assert fct([], []).schema == pl.Schema(SCHEMA)


# --- the warehouse DDL (0002_staging_marts.sql) matches the SCHEMA constants --------

SQL_TYPES = {
    pl.String(): "VARCHAR", pl.Int16(): "SMALLINT", pl.Int32(): "INTEGER", pl.Int64(): "BIGINT",
    pl.Float64(): "DOUBLE", pl.Boolean(): "BOOLEAN", pl.Date(): "DATE", pl.Datetime("us"): "TIMESTAMP",
    pl.List(pl.String()): "VARCHAR[]",
}


@pytest.mark.parametrize(
    ("table", "schema", "partition_column"),
    [
        ("staging.stg_slurm__jobs", stg_slurm__jobs.SCHEMA, [("month", "DATE")]),
        ("staging.stg_dcgm__gpu_hourly", stg_dcgm__gpu_hourly.SCHEMA, [("day", "DATE")]),
        ("marts.fct_job_usage", fct_module.SCHEMA, []),
        ("marts.mart_department_monthly", mart_department_monthly.SCHEMA, []),
    ],
)
def test_migration_matches_schema(tmp_path: Path, table: str, schema: dict, partition_column: list) -> None:
    schema_name, table_name = table.split(".")
    with connect(tmp_path / "wh.duckdb") as conn:
        columns = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [schema_name, table_name],
        ).fetchall()
    assert columns == [(name, SQL_TYPES[dtype]) for name, dtype in schema.items()] + partition_column
