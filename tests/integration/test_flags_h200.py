"""The review flags on the real H200 trace, through the real path.

Each non-idle job of the trace gets a Slurm job id and a matching ``sacct --parsable2``
allocation line (start/end to the second, 1 H200 on the trace's host); the samples carry
that id as their ``hpc_job`` label, as dcgm-exporter's Slurm mapping does. Then: sacct text
-> parse_sacct_text -> stg_slurm__jobs; samples -> stg_dcgm__gpu_minutely; both into a
DuckDB warehouse -> the attribution SQL -> fct_job_usage -> int_job_activity_profiled ->
fct_job_flags with the default thresholds except ``min_runtime_minutes = 0`` (the jobs
last 30-42 s).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from config.policy import FlagsConfig
from contracts.schemas import SACCT_FIELDS
from reports.flagged_jobs_csv import flagged_jobs_csv
from sources.sacct import parse_sacct_text
from tests.fixtures import h200
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.intermediate.int_gpu_minutes_attributed import int_gpu_minutes_attributed_sql
from transforms.marts.fct_job_flags import fct_job_flags
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.marts.job_activity_profile import int_job_activity_profiled
from transforms.staging.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs
from warehouse import connect, replace_partition

pytestmark = pytest.mark.integration

PERIOD = (datetime(2026, 11, 1), datetime(2026, 12, 1))
MONTH = date(2026, 11, 1)
H200_MIB = h200.device()["memory_total"] // 2**20  # 143771: the inventory's gpu_memory_mib
ACCOUNTS = pl.DataFrame(
    {
        "cluster": [h200.CLUSTER],
        "account": ["physics"],
        "department": ["phys"],
        "department_name": ["Physics"],
        "division": ["sci"],
        "division_name": ["Science"],
    }
)
INVENTORY = pl.DataFrame(
    {
        "cluster": [h200.CLUSTER],
        "hostname": [h200.HOSTNAME],
        "gpu": [0],
        "gpu_model": ["H200"],
        "gpu_i_profile": [None],
        "memory_mib": [H200_MIB],
        "nvlink_domain": [None],
        "switch_group": [None],
    },
    schema_overrides={
        "gpu": pl.Int16,
        "gpu_i_profile": pl.String,
        "memory_mib": pl.Int64,
        "nvlink_domain": pl.String,
        "switch_group": pl.String,
    },
)


def slurm_ids() -> dict[str, str]:
    """Trace job id -> Slurm job id (7001, 7002, ...), non-idle jobs only."""
    busy = h200.jobs().filter(pl.col("kind") != "idle").get_column("job_id").to_list()
    return {job: str(7001 + i) for i, job in enumerate(busy)}


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def sacct_text() -> str:
    """One COMPLETED allocation line per job: start floored, end ceiled to the second."""
    lines = ["|".join(SACCT_FIELDS)]
    ids = slurm_ids()
    for job in h200.jobs().filter(pl.col("kind") != "idle").iter_rows(named=True):
        start = job["start"].replace(microsecond=0)
        end = job["end"].replace(microsecond=0) + timedelta(seconds=1 if job["end"].microsecond else 0)
        tres = "billing=1,cpu=8,gres/gpu:h200=1,gres/gpu=1,node=1"
        jid = ids[job["job_id"]]
        lines.append(
            "|".join(
                [
                    jid,
                    jid,
                    job["kind"],
                    "alice",
                    "physics",
                    "gpu",
                    "normal",
                    "COMPLETED",
                    "0:0",
                    stamp(start),
                    stamp(start),
                    stamp(start),
                    stamp(end),
                    str(int((end - start).total_seconds())),
                    "01:00:00",
                    "1",
                    h200.HOSTNAME,
                    tres,
                    tres,
                    h200.CLUSTER,
                ]
            )
        )
    return "\n".join(lines) + "\n"


def labelled_samples() -> pl.DataFrame:
    """The trace's raw samples with hpc_job = the Slurm job id."""
    return h200.raw_samples().with_columns(pl.col("hpc_job").replace_strict(slurm_ids(), default=None))


@pytest.fixture(scope="module")
def flags_and_usage() -> tuple[pl.DataFrame, pl.DataFrame]:
    raw, rejects = parse_sacct_text(sacct_text(), source="h200.sacct", cluster=h200.CLUSTER, day=MONTH, has_header=True)
    assert rejects.height == 0
    jobs, bad = stg_slurm__jobs(raw, window_start=PERIOD[0], window_end=PERIOD[1])
    assert bad.height == 0 and jobs.height == 5
    minutely = stg_dcgm__gpu_minutely(labelled_samples().lazy(), h200.STEP_SECONDS).collect()
    minutely = minutely.with_columns(day=pl.col("minute").dt.date())
    thresholds = FlagsConfig(min_runtime_minutes=0)
    with connect(":memory:") as conn:
        replace_partition(conn, "staging.stg_slurm__jobs", jobs.with_columns(month=pl.lit(MONTH)), {"month": MONTH})
        for day in minutely.get_column("day").unique().to_list():
            replace_partition(
                conn, "staging.stg_dcgm__gpu_minutely", minutely.filter(pl.col("day") == day), {"day": day}
            )
        text, params = int_gpu_minutes_attributed_sql(
            h200.CLUSTER,
            PERIOD[0],
            PERIOD[0],
            PERIOD[1],
            h200.STEP_SECONDS,
            [h200.HOSTNAME],
            [1.0],
            thresholds.zero_util_threshold,
            sums_stored=False,
        )
        attributed = conn.sql(text, params=params).pl().cast(ATTRIBUTED_SCHEMA)
    usage = fct_job_usage(
        jobs=jobs,
        attributed=attributed,
        accounts=ACCOUNTS,
        gpu_models=INVENTORY.select("cluster", "hostname", "gpu_model"),
        period_start=PERIOD[0],
        period_end=PERIOD[1],
        step_seconds=h200.STEP_SECONDS,
    )
    profile = int_job_activity_profiled(
        attributed, usage, PERIOD[1], thresholds.input_bound_min_activity, thresholds.input_bound_max_activity
    )
    flags = fct_job_flags(usage, profile, INVENTORY, thresholds, {"H200": 4.0}, "EUR", PERIOD[1], MONTH)
    return flags, usage


def reasons_of(flags: pl.DataFrame, kind: str) -> set[str]:
    job_id = slurm_ids()[f"capA-0{ {'dense': 1, 'hog': 3, 'bursty': 4, 'starved': 5, 'tiny': 6}[kind] }-{kind}"]
    return set(flags.filter(pl.col("job_id") == job_id).get_column("reason").to_list())


def test_every_job_is_measured_by_its_label(flags_and_usage) -> None:
    _, usage = flags_and_usage
    assert usage.height == 5
    assert set(usage.get_column("attribution_method")) == {"hpc_job_label"}
    assert set(usage.get_column("gpu_model")) == {"H200"}


def test_dense_is_not_flagged(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    assert reasons_of(flags, "dense") == set()


def test_hog_holds_memory_at_zero_activity(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    reasons = reasons_of(flags, "hog")
    assert {"MEMORY_HELD_IDLE", "ZERO_UTIL"} <= reasons
    assert not reasons & {"BUSY_ENGINE_IDLE_SMS", "INPUT_BOUND"}


def test_tiny_is_busy_engine_with_idle_sms(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    reasons = reasons_of(flags, "tiny")
    assert {"BUSY_ENGINE_IDLE_SMS", "LOW_UTIL"} <= reasons
    assert not reasons & {"INPUT_BOUND", "MEMORY_HELD_IDLE", "ZERO_UTIL"}  # the engine is busy: not idle
    row = flags.filter(pl.col("reason") == "BUSY_ENGINE_IDLE_SMS").row(0, named=True)
    assert row["detail"].startswith("SM active 0.6") and "GPU_UTIL reads 79.6%" in row["detail"]


def test_starved_is_input_bound_and_low(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    reasons = reasons_of(flags, "starved")
    assert {"INPUT_BOUND", "LOW_UTIL"} <= reasons
    assert not reasons & {"BUSY_ENGINE_IDLE_SMS", "MEMORY_HELD_IDLE", "ZERO_UTIL"}


def test_bursty_is_input_bound_and_low(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    reasons = reasons_of(flags, "bursty")
    assert {"INPUT_BOUND", "LOW_UTIL"} <= reasons
    assert not reasons & {"BUSY_ENGINE_IDLE_SMS", "MEMORY_HELD_IDLE", "ZERO_UTIL"}


def test_small_jobs_would_fit_an_h200_mig_slice(flags_and_usage) -> None:
    flags, _ = flags_and_usage
    oversized = dict(flags.filter(pl.col("reason") == "OVERSIZED").select("job_id", "detail").iter_rows())
    ids = slurm_ids()
    for kind in ("capA-06-tiny", "capA-05-starved", "capA-04-bursty"):
        assert "fits a 1g.18gb MIG slice" in oversized[ids[kind]], kind  # an H200's smallest slice
    assert ids["capA-01-dense"] not in oversized
    assert ids["capA-03-hog"] not in oversized  # ZERO_UTIL: release it rather than shrink it


def test_idle_cost_and_csv(flags_and_usage) -> None:
    flags, usage = flags_and_usage
    hog = flags.filter(pl.col("job_id") == slurm_ids()["capA-03-hog"]).row(0, named=True)
    assert hog["idle_cost"] == pytest.approx(hog["idle_gpu_hours"] * 4.0) and hog["currency"] == "EUR"
    lines = flagged_jobs_csv(flags).splitlines()
    assert len(lines) == 1 + 4  # header + hog, bursty, starved, tiny
    assert all(line.startswith("h200,") for line in lines[1:])
