"""int_gpu_minutes_attributed: minute rows of DCGM samples tied to Slurm runs in DuckDB SQL."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from transforms.intermediate.int_gpu_minutes_attributed import ORDER, SCHEMA, int_gpu_minutes_attributed_sql
from transforms.staging.stg_dcgm__gpu_hour_sums import stg_dcgm__gpu_hour_sums_sql
from transforms.staging.stg_dcgm__gpu_minutely import SCHEMA as MINUTELY_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA
from warehouse import connect, replace_partition

MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
T0 = datetime(2024, 3, 10, 10)
HOSTS = {"n1": 8.0, "n2": 8.0}
MODE = {"whole_hours": True}


@pytest.fixture(autouse=True, params=[True, False], ids=["whole_hours", "every_minute"])
def whole_hours(request: pytest.FixtureRequest) -> bool:
    """Every rule below holds whether whole hours come from the hour sums or every minute row
    is attributed."""
    MODE["whole_hours"] = request.param
    return request.param


def run(
    job_id_raw: str, start: datetime | None, end: datetime | None, gpus: float = 1.0, hosts=("n1",), **fields
) -> dict:
    row = {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": job_id_raw,
        "job_id_raw": job_id_raw,
        "submit_time": (start or T0) - timedelta(hours=1),
        "start_time": start,
        "end_time": end,
        "gpus": gpus,
        "gpu_slots": int(gpus),
        "is_mig": False,
        "n_nodes": len(hosts),
        "hosts": list(hosts),
    }
    return row | fields


def minute(
    at: datetime, hpc_job: str | None = None, gpu: int = 0, host: str = "n1", sm: float = 0.5, n: int = 2, **fields
) -> dict:
    """A stg_dcgm__gpu_minutely row of ``n`` samples whose sm_active (the best signal) is ``sm``."""
    row = {c: None for c in MINUTELY_SCHEMA} | {
        "cluster": "c1",
        "hostname": host,
        "gpu": gpu,
        "uuid": f"GPU-{host}-{gpu}",
        "hpc_job": hpc_job,
        "minute": at,
        "n_samples": n,
        "expected_samples": 2,
        "coverage": min(n / 2, 1.0),
        "sm_active_mean": sm,
        "sm_active_max": sm,
        "best_signal_mean": sm,
        "gpu_util_mean": 0.9,
        "fb_used_mib_mean": 100.0,
        "fb_used_mib_max": 120.0,
        "power_w_mean": 300.0,
    }
    return row | fields


def land_minutes(conn, rows: pl.DataFrame, step_seconds: int, zero_threshold: float = 0.01, mig_weights=None) -> None:
    """Each day's minute rows and, as the daily job does, their hour sums."""
    for day in rows.get_column("day").unique().to_list():
        replace_partition(conn, "staging.stg_dcgm__gpu_minutely", rows.filter(pl.col("day") == day), {"day": day})
        text, params = stg_dcgm__gpu_hour_sums_sql("c1", day, step_seconds, zero_threshold, mig_weights)
        sums = conn.sql(text, params=params).pl().with_columns(day=pl.lit(day))
        replace_partition(conn, "staging.stg_dcgm__gpu_hour_sums", sums, {"day": day})


def attribute(
    runs: list[dict],
    minutes: list[dict],
    step_seconds: int = 30,
    hosts=HOSTS,
    windows=(MARCH,),
    mig_weights=None,
    kept: pl.Expr | None = None,
) -> pl.DataFrame:
    """The SQL's rows for the month, run once per period window (the asset runs day windows).
    ``kept``: after the hour sums are made, the minute rows left for the month to read."""
    jobs = pl.DataFrame(runs, schema=JOBS_SCHEMA).with_columns(month=pl.lit(date(2024, 3, 1)))
    rows = pl.DataFrame(minutes, schema=MINUTELY_SCHEMA).with_columns(day=pl.col("minute").dt.date())
    with connect(":memory:") as conn:
        replace_partition(conn, "staging.stg_slurm__jobs", jobs, {"month": date(2024, 3, 1)})
        land_minutes(conn, rows, step_seconds, mig_weights=mig_weights)
        if kept is not None:
            for day in rows.get_column("day").unique().to_list():
                left = rows.filter(pl.col("day") == day, kept)
                replace_partition(conn, "staging.stg_dcgm__gpu_minutely", left, {"day": day})
        frames = []
        for low, high in windows:
            text, params = int_gpu_minutes_attributed_sql(
                "c1",
                MARCH[0],
                low,
                high,
                step_seconds,
                list(hosts),
                list(hosts.values()),
                0.01,
                mig_weights=mig_weights,
                whole_hours=MODE["whole_hours"],
            )
            frames.append(conn.sql(text, params=params).pl().cast(SCHEMA))
        return pl.concat(frames)


def per_method(out: pl.DataFrame, job: str | None = None) -> dict[str, float]:
    rows = out if job is None else out.filter(pl.col("job_id_raw") == job)
    return dict(rows.group_by("attribution_method").agg(pl.col("samples").sum()).rows())


def test_label_inside_the_run_else_unattributed() -> None:
    runs = [run("9", T0 + timedelta(seconds=20), T0 + timedelta(minutes=3))]
    minutes = [
        minute(T0, "9"),  # the run starts inside this minute
        minute(T0 + timedelta(minutes=2), "9"),
        minute(T0 + timedelta(minutes=3), "9"),  # at the end: no run covers it
        minute(T0 + timedelta(minutes=2), "10"),  # a job with no run
        minute(T0 + timedelta(minutes=2), "9", cluster="c2"),  # another cluster
    ]
    out = attribute(runs, minutes)
    assert per_method(out, "9") == {"hpc_job_label": 4.0}
    assert per_method(out.filter(pl.col("job_id_raw").is_null())) == {"unattributed": 4.0}
    assert out.get_column("cluster").unique().to_list() == ["c1"]
    assert out.schema == pl.Schema(SCHEMA)


def test_unlabelled_host_with_one_whole_host_job_is_exclusive() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=8.0)]
    minutes = [minute(T0 + timedelta(minutes=5), gpu=g, sm=0.1 * g) for g in range(8)]
    out = attribute(runs, minutes)
    assert per_method(out) == {"host_exclusive": 16.0}
    job = out.filter(pl.col("job_id_raw") == "9")
    assert job.get_column("best_sum").sum() / job.get_column("best_n").sum() == pytest.approx(0.35)
    assert job.get_column("energy_j").sum() == pytest.approx(8 * 300.0 * 2 * 30)


def test_partial_host_single_job_gets_its_share_and_the_rest_is_unallocated() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=2.0)]
    out = attribute(runs, [minute(T0 + timedelta(minutes=5), gpu=g) for g in range(8)])
    assert per_method(out) == pytest.approx({"host_exclusive": 4.0, "unallocated": 12.0})


def test_concurrent_jobs_share_the_host_by_gpu_count() -> None:
    runs = [run("1", T0, T0 + timedelta(hours=1), gpus=2.0), run("2", T0, T0 + timedelta(hours=1), gpus=6.0)]
    out = attribute(runs, [minute(T0 + timedelta(minutes=5), gpu=g) for g in range(8)])
    assert per_method(out, "1") == pytest.approx({"host_shared": 4.0})
    assert per_method(out, "2") == pytest.approx({"host_shared": 12.0})
    assert "unallocated" not in per_method(out)


def test_multi_host_run_holds_its_count_spread_over_hosts() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=8.0, hosts=("n1", "n2"))]
    minutes = [minute(T0, gpu=g, host=h) for h in ("n1", "n2") for g in range(8)]
    out = attribute(runs, minutes)
    assert per_method(out, "9") == pytest.approx({"host_exclusive": 16.0})
    assert per_method(out)["unallocated"] == pytest.approx(16.0)


def test_unlabelled_gpus_on_a_labelling_host_are_unallocated_not_host_attributed() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=1.0)]
    minutes = [minute(T0 + timedelta(minutes=1), "9", gpu=0, sm=0.9), minute(T0 + timedelta(minutes=30), gpu=1, sm=0.0)]
    out = attribute(runs, minutes)
    assert per_method(out, "9") == {"hpc_job_label": 2.0}
    assert per_method(out.filter(pl.col("gpu") == 1)) == {"unallocated": 2.0}


def test_unlabelled_samples_with_no_run_are_unallocated() -> None:
    out = attribute([], [minute(T0, gpu=0)])
    assert per_method(out) == {"unallocated": 2.0}


def test_requeued_runs_split_the_shared_minute_by_overlap() -> None:
    boundary = T0 + timedelta(minutes=10, seconds=15)
    runs = [run("9", T0, boundary, state="REQUEUED"), run("9", boundary, T0 + timedelta(minutes=20))]
    out = attribute(runs, [minute(T0 + timedelta(minutes=10), "9", n=4)])
    shares = dict(out.select("start_time", "samples").rows())
    assert shares == pytest.approx({T0: 1.0, boundary: 3.0})


def test_zero_minutes_and_signal_counts() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1))]
    minutes = [
        minute(T0, "9", sm=0.005),
        minute(T0 + timedelta(minutes=1), "9", sm=0.5, sm_active_mean=None, best_signal_mean=0.5),
    ]
    out = attribute(runs, minutes).row(0, named=True)
    assert (out["samples"], out["zero_samples"], out["sm_active_n"], out["best_n"]) == (4.0, 2.0, 2.0, 4.0)
    assert out["fb_used_mib_max"] == 120.0


def test_rejects_mismatched_hosts() -> None:
    with pytest.raises(ValueError):
        int_gpu_minutes_attributed_sql("c1", MARCH[0], MARCH[0], MARCH[1], 30, ["n1"], [], 0.01)


def test_docs_list_exactly_the_stored_columns() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "marts.md").read_text()
    section = text.split("## intermediate.int_gpu_minutes_attributed\n", 1)[1].split("\n## ", 1)[0]
    documented = [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]
    assert documented == [*SCHEMA, "month"]


def test_day_windows_give_the_rows_of_the_whole_month() -> None:
    midnight = datetime(2024, 3, 11)
    runs = [
        run("1", midnight - timedelta(hours=2), midnight + timedelta(hours=1), gpus=2.0),  # unlabelled host, shared
        run("2", midnight - timedelta(minutes=30), None, gpus=4.0),  # still running
        run("3", midnight - timedelta(hours=1), midnight + timedelta(seconds=20), hosts=("n2",), state="REQUEUED"),
        run("3", midnight + timedelta(seconds=20), midnight + timedelta(hours=2), hosts=("n2",)),
    ]
    minutes = [minute(midnight + timedelta(minutes=k), gpu=g) for k in (-31, -1, 0, 1, 59, 61) for g in range(8)]
    minutes += [minute(midnight + timedelta(minutes=k), "3", host="n2") for k in (-1, 0, 1)]
    days = [(MARCH[0] + timedelta(days=d), MARCH[0] + timedelta(days=d + 1)) for d in range(31)]
    whole, by_day = attribute(runs, minutes), attribute(runs, minutes, windows=days)
    assert set(whole.get_column("attribution_method")) >= {"host_shared", "hpc_job_label", "unallocated"}
    assert by_day.sort(list(ORDER), nulls_last=False).equals(whole.sort(list(ORDER), nulls_last=False))


def test_whole_hours_come_from_the_hour_sums_with_the_same_bits(whole_hours: bool) -> None:
    """Hours going whole to one place (a job's run covering the hour, a label without a run, idle
    hosts, a whole-host job) are read from the hour sums: the month gives the same rows, to the
    bit, with their minute rows gone; the edge hours still need theirs."""
    start = T0 - timedelta(minutes=30)
    runs = [
        run("7", start, T0 + timedelta(hours=2, minutes=10)),  # labelled, covers 10:00 and 11:00 whole
        run("8", T0 + timedelta(hours=1), T0 + timedelta(hours=4), gpus=8.0, hosts=("n2",)),  # whole host n2
        run("6", T0 + timedelta(minutes=17, seconds=20), T0 + timedelta(hours=1, minutes=42, seconds=10)),
    ]
    minutes = []
    for k in range(-40, 4 * 60 + 20):
        at = T0 + timedelta(minutes=k)
        wobble = (k % 7) / 7 + 1e-3 * (k % 3)
        minutes.append(minute(at, "7", sm=wobble, n=2 if k % 5 else 1, power_w_mean=250.0 + k / 3))
        minutes.append(minute(at, gpu=1, sm=wobble / 2))  # unlabelled on a labelled host
        minutes.append(minute(at, "99", gpu=2, sm=0.0))  # a label no run has
        minutes.append(minute(at, host="n2", gpu=k % 8, sm=wobble, fb_used_mib_mean=None))
        if 17 <= k <= 102:  # job 6's GPU is labelled only while it runs: its first and last hours go whole too
            minutes.append(minute(at, "6", gpu=3, sm=wobble / 3))
    MODE["whole_hours"] = False
    reference = attribute(runs, minutes)
    MODE["whole_hours"] = whole_hours
    # Only job 7's first and last hours on n1 need minute rows (its label outlasts the run); every
    # hour of n2 and of job 6 goes whole.
    edges = (pl.col("hostname") == "n1") & pl.col("minute").dt.truncate("1h").is_in(
        [T0 - timedelta(hours=1), T0 + timedelta(hours=2)]
    )
    kept = edges if whole_hours else pl.lit(True)
    out = attribute(runs, minutes, kept=kept)
    assert set(out.get_column("attribution_method")) == {
        "hpc_job_label",
        "unallocated",
        "unattributed",
        "host_exclusive",
    }
    assert out.equals(reference)


def test_docs_list_exactly_the_hour_sums_columns(whole_hours: bool) -> None:
    import re
    from pathlib import Path

    from transforms.staging.stg_dcgm__gpu_hour_sums import SCHEMA as SUMS_SCHEMA

    text = (Path(__file__).parents[2] / "docs" / "marts.md").read_text()
    section = text.split("## staging.stg_dcgm__gpu_hour_sums\n", 1)[1].split("\n## ", 1)[0]
    documented = [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]
    assert documented == [*SUMS_SCHEMA, "day"]
