"""fct_job_usage: clipping runs to the period, which attributed rows a run owns, pending and unsampled runs."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from tests.unit.fct_job_usage_cases import APRIL, MARCH, fct, hour, job, sm


def test_run_crossing_the_month_boundary_is_prorated() -> None:
    start, end = datetime(2024, 3, 31, 23), datetime(2024, 4, 1, 2)
    jobs = [job("9", start, end, gpus=2.0, gpu_slots=2)]
    hours = [hour("9", start, gpu=g, **sm(0.5)) for g in (0, 1)]
    hours += [hour("9", datetime(2024, 4, 1, h), start, gpu=g, **sm(0.1)) for h in (0, 1) for g in (0, 1)]
    march, april = fct(jobs, hours, MARCH), fct(jobs, hours, APRIL)
    assert march.select("elapsed_seconds", "gpu_hours", "n_samples", "expected_samples", "month").row(0) == (
        3600,
        2.0,
        120,
        120.0,
        date(2024, 3, 1),
    )
    assert march.get_column("utilization")[0] == pytest.approx(0.5)
    assert april.select("elapsed_seconds", "gpu_hours", "n_samples", "month").row(0) == (
        7200,
        4.0,
        240,
        date(2024, 4, 1),
    )
    assert april.get_column("utilization")[0] == pytest.approx(0.1)


def test_open_run_counts_up_to_period_end() -> None:
    out = fct([job("9", datetime(2024, 3, 31, 22), None)], [])
    assert out.select("is_open", "elapsed_seconds", "gpu_hours").row(0) == (True, 7200, 2.0)


def test_requeued_runs_get_their_own_hours() -> None:
    first = job("500", datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 10, 30), state="REQUEUED")
    second = job("500", datetime(2024, 3, 10, 12), datetime(2024, 3, 10, 13))
    hours = [
        hour("500", datetime(2024, 3, 10, 10), n=30, **sm(0.2, 30)),
        hour("500", datetime(2024, 3, 10, 12), **sm(0.8)),
        hour("500", datetime(2024, 3, 10, 11), datetime(2024, 3, 10, 11), **sm(0.9)),
    ]  # no such run
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


@pytest.mark.parametrize(
    ("methods", "best"),
    [
        (["host_shared", "host_exclusive"], "host_exclusive"),
        (["host_shared"], "host_shared"),
        (["host_shared", "hpc_job_label"], "hpc_job_label"),
    ],
)
def test_the_runs_method_is_the_best_among_its_samples(methods: list[str], best: str) -> None:
    start = datetime(2024, 3, 10, 10)
    hours = [hour("9", start + timedelta(hours=i), start, method=m, **sm(0.5)) for i, m in enumerate(methods)]
    out = fct([job("9", start, start + timedelta(hours=3))], hours)
    assert out.get_column("attribution_method").to_list() == [best]


def test_host_shared_fractional_samples_round_and_weight_the_means() -> None:
    start = datetime(2024, 3, 10, 10)
    hours = [
        hour(
            "9",
            start,
            start,
            n=0,
            method="host_shared",
            samples=22.5,
            best_sum=2.25,
            best_n=22.5,
            sm_active_sum=2.25,
            sm_active_n=22.5,
            zero_samples=4.5,
        )
    ]
    row = fct([job("9", start, start + timedelta(hours=1))], hours).row(0, named=True)
    assert (row["n_samples"], row["utilization"]) == (22, pytest.approx(0.1))
    assert row["zero_util_gpu_hours"] == pytest.approx(0.2)


def test_array_and_het_parts_are_kept() -> None:
    start = datetime(2024, 3, 10, 10)
    runs = [
        job("12", start, start + timedelta(hours=1), job_id="10_2", array_job_id="10", array_task_id="2"),
        job("20", start, start + timedelta(hours=1), job_id="20+1", het_job_id="20", het_offset=1),
    ]
    out = fct(runs, []).sort("job_id_raw")
    assert out.select("job_id", "array_job_id", "array_task_id", "het_job_id", "het_offset").rows() == [
        ("10_2", "10", "2", None, None),
        ("20+1", None, None, "20", 1),
    ]


def test_pending_run_has_no_hours_and_no_utilization() -> None:
    pending = job("9", None, None, submit_time=datetime(2024, 3, 10), eligible_time=datetime(2024, 3, 10), hosts=[])
    out = fct([pending], [hour("9", datetime(2024, 3, 10), **sm(0.5))])
    row = out.row(0, named=True)
    assert (row["elapsed_seconds"], row["gpu_hours"], row["n_samples"], row["expected_samples"]) == (0, 0.0, 0, 0.0)
    for column in (
        "utilization",
        "utilization_signal",
        "active_gpu_hours",
        "idle_gpu_hours",
        "zero_util_gpu_hours",
        "queue_seconds",
        "submit_wait_seconds",
        "sample_coverage",
        "energy_kwh",
        "gpu_model",
    ):
        assert row[column] is None, column
    assert (row["attribution_method"], row["is_open"]) == ("none", False)


def test_started_run_without_samples_has_null_utilization_and_none_attribution() -> None:
    out = fct([job("9", datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 11))], [])
    assert out.select("gpu_hours", "utilization", "active_gpu_hours", "attribution_method", "sample_coverage").row(
        0
    ) == (1.0, None, None, "none", 0.0)
