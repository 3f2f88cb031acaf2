"""Crafted mart frames for the report tests: two months (2025-02, 2025-03), two clusters, one
of them with a hostile name, and hostile job, user, account and department strings."""

from __future__ import annotations

import json
import re
from datetime import date, datetime

import polars as pl
from plotly.offline import get_plotlyjs

from reports import ReviewSettings, build_inputs
from reports.data import ReviewInputs
from transforms.marts.fct_job_flags import SCHEMA as FLAG_SCHEMA
from transforms.marts.mart_user_monthly import SCHEMA as USER_SCHEMA

MONTH = date(2025, 3, 1)
PREVIOUS = date(2025, 2, 1)
EVIL_JOB = "<script>alert(1)</script>"
EVIL_USER = 'a&b"c'
EVIL_ACCOUNT = "<b>acct</b>"
EVIL_DEPT = "<img src=x onerror=alert(2)>"
EVIL_CLUSTER = "b&<i>2</i>"
SETTINGS = ReviewSettings(
    currency="EUR",
    prices={"H100": 2.0, "A100": 1.0},
    quotas={"physics": 1.0, "chem": 2.0},
    overcommit_ratio=1.5,
    low_efficiency_gpu_hours=50.0,
    low_efficiency_utilization=0.25,
)


def cluster_row(cluster: str, month: date, capacity: float, allocated: float, active: float, **kw) -> dict:
    return dict(
        cluster=cluster,
        month=month,
        capacity_gpu_hours=capacity,
        allocated_gpu_hours=allocated,
        active_gpu_hours=active,
        idle_gpu_hours=allocated - active,
        job_count=kw.get("jobs", 5),
        sample_coverage=kw.get("coverage", 0.975),
        jobs_without_samples=kw.get("unsampled", 2),
        queue_seconds_p50=kw.get("p50", 1200.0),
        queue_seconds_p95=kw.get("p95", 2280.0),
    )


def clusters_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            cluster_row(
                "alpha", PREVIOUS, 800.0, 400.0, 200.0, jobs=4, coverage=0.9, unsampled=1, p50=600.0, p95=1200.0
            ),
            cluster_row("alpha", MONTH, 1000.0, 625.0, 250.0),
            cluster_row(EVIL_CLUSTER, MONTH, 0.0, 0.0, 0.0, jobs=1, coverage=1.0, unsampled=0, p50=None, p95=None),
        ]
    )


def department_row(cluster: str, department: str, gpu_hours: float, active: float, month: date = MONTH, **kw) -> dict:
    measured = kw.get("measured", gpu_hours)
    return dict(
        cluster=cluster,
        month=month,
        division=kw.get("division", "science"),
        department=department,
        job_count=kw.get("jobs", 2),
        user_count=kw.get("users", 1),
        gpu_hours=gpu_hours,
        measured_gpu_hours=measured,
        active_gpu_hours=active,
        idle_gpu_hours=measured - active,
        zero_util_gpu_hours=kw.get("zero", 10.0),
        utilization=active / measured if measured else None,
        energy_kwh=kw.get("energy", 10.0),
        queue_seconds_p50=kw.get("p50", 600.0),
        queue_seconds_p95=kw.get("p95", 1200.0),
        share_of_capacity=kw.get("share", 0.1),
        is_unallocated=False,
    )


def departments_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            department_row("alpha", "physics", 250.0, 100.0, PREVIOUS),
            department_row("alpha", "physics", 300.0, 150.0, p50=600.0, p95=1200.0, share=0.3),
            department_row("alpha", EVIL_DEPT, 200.0, 50.0, users=2, p50=1200.0, p95=2400.0, share=0.2),
            department_row("alpha", "unmapped", 125.0, 0.0, division="unmapped", measured=0.0, jobs=1, share=0.125),
            department_row(EVIL_CLUSTER, "physics", 10.0, 5.0, jobs=1, share=None),
        ]
    )


def job(job_id: str, **overrides) -> dict:
    row = dict(
        cluster="alpha",
        job_id=job_id,
        job_id_raw=job_id,
        job_name=f"train-{job_id}",
        user_name="ann",
        account="phys",
        department="physics",
        division="science",
        partition_name="gpu",
        state="COMPLETED",
        start_time=datetime(2025, 3, 2, 10, 0),
        end_time=datetime(2025, 3, 2, 20, 0),
        gpus=4.0,
        gpu_model="H100",
        gpu_hours=40.0,
        active_gpu_hours=20.0,
        utilization=0.5,
        utilization_signal="sm_active",
        idle_gpu_hours=20.0,
        zero_util_gpu_hours=1.0,
        queue_seconds=0.0,
        energy_kwh=10.0,
        n_samples=100,
        month=MONTH,
        elapsed_seconds=36_000,
    )
    return row | overrides


def jobs_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            job("1", queue_seconds=0.0),
            job("2", queue_seconds=600.0, idle_gpu_hours=5.0, active_gpu_hours=35.0, partition_name="debug"),
            job(
                "3",
                queue_seconds=1200.0,
                job_name=EVIL_JOB,
                user_name=EVIL_USER,
                account=EVIL_ACCOUNT,
                department=EVIL_DEPT,
                idle_gpu_hours=90.0,
                gpu_hours=100.0,
                active_gpu_hours=10.0,
                utilization=0.1,
                gpu_model="A100 3g.40gb",
                partition_name=EVIL_JOB,
            ),
            job(
                "4",
                queue_seconds=1800.0,
                utilization=None,
                utilization_signal=None,
                idle_gpu_hours=0.0,
                active_gpu_hours=0.0,
                department="unmapped",
                n_samples=0,
            ),
            job("5", queue_seconds=2400.0, utilization=1.0, idle_gpu_hours=0.0, active_gpu_hours=40.0),
            job(
                "9",
                cluster=EVIL_CLUSTER,
                queue_seconds=None,
                utilization=0.02,
                active_gpu_hours=0.8,
                idle_gpu_hours=39.2,
            ),
        ]
    )


def models_frame() -> pl.DataFrame:
    rows = [
        (PREVIOUS, "alpha", "H100", 800.0, 400.0, 400.0, 200.0),
        (MONTH, "alpha", "H100", 800.0, 500.0, 500.0, 300.0),
        (MONTH, "alpha", "A100 3g.40gb", 200.0, 100.0, 125.0, 75.0),
    ]
    names = [
        "month",
        "cluster",
        "gpu_model",
        "capacity_gpu_hours",
        "allocated_gpu_hours",
        "gpu_hours",
        "idle_gpu_hours",
    ]
    return pl.DataFrame(rows, schema=names, orient="row")


def runs_and_model_hours(models: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """What ``build_inputs`` sums into ``models``, from per-model month totals: one run and one
    hour row (holding the month's capacity) per row, on the 2nd of the month at 00:00."""
    day2 = (pl.col("month").cast(pl.Datetime("us")) + pl.duration(days=1)).alias("start_time")
    runs = models.select(
        "cluster", "month", "gpu_model", day2, pl.lit(3600).alias("elapsed_seconds"), "gpu_hours", "idle_gpu_hours"
    )
    model_hours = models.select(
        "cluster",
        "month",
        "gpu_model",
        day2.alias("hour"),
        (pl.col("capacity_gpu_hours") * 3600).alias("capacity_seconds"),
        (pl.col("allocated_gpu_hours") * 3600).alias("allocated_seconds"),
    )
    return {"runs": runs, "model_hours": model_hours}


def hourly_frame() -> pl.DataFrame:
    """Monday 2025-03-03 10:00 (day): half allocated, a quarter active; 22:00 (night): idle;
    Saturday 2025-03-08 10:00: fully allocated, all active. Each hour: two GPUs."""
    hours = [datetime(2025, 3, 3, 10), datetime(2025, 3, 3, 22), datetime(2025, 3, 8, 10)]
    return pl.DataFrame(
        {
            "cluster": ["alpha"] * 3,
            "hour": hours,
            "capacity_seconds": [7200.0] * 3,
            "allocated_seconds": [3600.0, 0.0, 7200.0],
            "active_seconds": [1800.0, None, 7200.0],
            "n_samples": [240, 120, 240],
            "expected_samples": [240, 240, 240],
        }
    )


def flag(job_id: str, reason: str, severity: str, wasted: float, **overrides) -> dict:
    row = {name: None for name in FLAG_SCHEMA} | dict(
        cluster="alpha",
        job_id=job_id,
        job_id_raw=job_id,
        start_time=datetime(2025, 3, 2, 10, 0),
        user_name="ann",
        account="phys",
        department="physics",
        division="science",
        partition_name="gpu",
        job_name=f"train-{job_id}",
        gpus=4.0,
        gpu_model="H100",
        gpu_hours=40.0,
        utilization=0.5,
        utilization_signal="sm_active",
        reason=reason,
        severity=severity,
        detail=f"{reason} evidence",
        recommendation=f"fix {reason}",
        wasted_gpu_hours=wasted,
        idle_gpu_hours=20.0,
        idle_cost=40.0,
        currency="EUR",
        month=MONTH,
    )
    return row | overrides


def flags_frame() -> pl.DataFrame:
    evil = dict(
        job_name=EVIL_JOB,
        user_name=EVIL_USER,
        account=EVIL_ACCOUNT,
        department=EVIL_DEPT,
        gpu_model="A100 3g.40gb",
        gpu_hours=100.0,
        idle_gpu_hours=90.0,
        idle_cost=90.0,
        utilization=0.1,
    )
    return pl.DataFrame(
        [
            flag("1", "IDLE_TAIL", "low", 4.0),
            flag("3", "LOW_UTIL", "high", 90.0, **evil),
            flag("3", "INPUT_BOUND", "medium", 60.0, **evil, detail=EVIL_JOB, recommendation="<b>check</b> loader"),
        ],
        schema=FLAG_SCHEMA,
    )


def user_row(user: str, department: str, gpu_hours: float, wasted: float, **kw) -> dict:
    return {name: None for name in USER_SCHEMA} | dict(
        cluster="alpha",
        user_name=user,
        department=department,
        division="science",
        job_count=kw.get("jobs", 2),
        gpu_hours=gpu_hours,
        active_gpu_hours=gpu_hours / 2,
        idle_gpu_hours=gpu_hours / 2,
        zero_util_gpu_hours=kw.get("zero", 0.0),
        utilization=0.5,
        idle_cost=gpu_hours,
        currency="EUR",
        flagged_job_count=kw.get("flagged", 1),
        wasted_gpu_hours=wasted,
        is_zero_util_over_threshold=kw.get("zero_flag", False),
        is_low_efficiency=kw.get("low_eff", False),
        month=MONTH,
    )


def users_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            user_row("ann", "physics", 160.0, 4.0),
            user_row(EVIL_USER, EVIL_DEPT, 100.0, 90.0, zero=30.0, zero_flag=True, low_eff=True),
            user_row("bob", "unmapped", 40.0, 0.0, flagged=0),
        ],
        schema=USER_SCHEMA,
    )


def make_inputs(**overrides) -> ReviewInputs:
    frames = dict(
        clusters=clusters_frame(),
        departments=departments_frame(),
        jobs=jobs_frame(),
        hourly=hourly_frame(),
        **runs_and_model_hours(models_frame()),
        flags=flags_frame(),
        users=users_frame(),
        settings=SETTINGS,
    )
    return build_inputs(MONTH, "warehouse test.duckdb", **(frames | overrides))


# -- reading rendered pages --

BUNDLE = get_plotlyjs()
PLOTLY_SCRIPT = re.compile(
    r'<script src="((?:\.\./)+)assets/plotly-[0-9][0-9a-z.-]*\.min\.js" charset="utf-8"></script>'
)


def loads_shared_plotly(page: str) -> str:
    """``page`` after checking that it loads the reports folder's plotly.js once, by a relative
    path, and does not inline it."""
    assert BUNDLE[:200] not in page
    assert len(PLOTLY_SCRIPT.findall(page)) == 1
    return page


def section(page: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}".*?</section>', page, flags=re.S)
    assert match, section_id
    return match.group(0)


def section_ids(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', page)


def figure_json(page: str, div_id: str) -> tuple[list, dict]:
    """The data and layout arguments of the Plotly.newPlot call for one div."""
    call = re.search(rf'Plotly\.newPlot\(\s*"{div_id}",\s*', loads_shared_plotly(page))
    assert call, div_id
    decoder = json.JSONDecoder()
    data, end = decoder.raw_decode(call.string, call.end())
    comma = re.compile(r"\s*,\s*").match(call.string, end)
    layout, _ = decoder.raw_decode(call.string, comma.end())
    return data, layout


def table_row(html: str, first_cell: str) -> list[str]:
    """The cell texts of the table row whose first cell is ``first_cell`` (escaped text)."""
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)
        if cells and re.sub(r"<[^>]+>", "", cells[0]) == first_cell:
            return [re.sub(r"<a [^>]*>|</a>", "", c) for c in cells]
    raise AssertionError(f"no row {first_cell!r}")
