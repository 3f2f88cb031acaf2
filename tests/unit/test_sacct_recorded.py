"""What a one-node cluster cannot produce, in real 22.05 sacct format, through file mode and staging.

tests/fixtures/sacct/recorded_22.05_multinode.txt (see the README there): het job components,
MIG gres, multi-node node lists, a month-crossing run, ``CANCELLED by 1234``, a running job
(``End=Unknown``), a pending array range and a preempted-then-requeued job.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.suites import node_gpu_capacity, staged_jobs_frame, staged_jobs_suite
from sources.sacct import read_sacct_file
from transforms.marts.fct_job_usage import _with_clipped_run
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sacct" / "recorded_22.05_multinode.txt"
HEADER = (Path(__file__).parents[1] / "fixtures" / "sacct" / "real_22.05_mix.txt").read_text().splitlines()[0]
OCTOBER = (datetime(2026, 10, 1), datetime(2026, 11, 1))
NOVEMBER = (datetime(2026, 11, 1), datetime(2026, 12, 1))


def staged(window: tuple[datetime, datetime], weights: dict[str, float] | None = None) -> pl.DataFrame:
    start, end = window
    raw, rejects = read_sacct_file(FIXTURE, cluster="gpu-prod", day=start.date(), start=start, end=end)
    assert rejects.is_empty()
    jobs, bad = stg_slurm__jobs(raw, window_start=start, window_end=end, mig_weights=weights)
    assert bad.is_empty(), bad["reason"].to_list()
    return jobs


def by_id(jobs: pl.DataFrame) -> dict[str, dict]:
    rows = jobs.sort("start_time", nulls_last=True).to_dicts()
    return {row["job_id"]: row for row in rows if row["state"] != "PREEMPTED"} | {
        f"{row['job_id']}:preempted": row for row in rows if row["state"] == "PREEMPTED"
    }


def test_fixture_has_the_real_header_and_field_count() -> None:
    lines = FIXTURE.read_text().splitlines()
    assert lines[0] == HEADER
    assert {line.count("|") for line in lines} == {HEADER.count("|")}


def test_het_components_are_separate_allocations_with_their_own_tres_and_hosts() -> None:
    jobs = by_id(staged(OCTOBER))
    first, second = jobs["201+0"], jobs["201+1"]
    assert (first["job_id_raw"], second["job_id_raw"]) == ("201", "202")
    assert (first["het_job_id"], first["het_offset"], second["het_job_id"], second["het_offset"]) == (
        "201",
        0,
        "201",
        1,
    )
    assert (first["gpus"], second["gpus"]) == (4.0, 16.0)  # typed h100=4 and untyped =4: not 8
    assert (first["hosts"], second["hosts"]) == (["gpu-01"], ["gpu-02", "gpu-03"])
    assert (first["n_steps"], second["n_steps"]) == (3, 2)  # batch, extern, 0 / extern, 0


def test_mig_slices_count_as_fractions_never_with_the_untyped_count() -> None:
    jobs = by_id(staged(OCTOBER))
    assert jobs["210"]["gpus"] == pytest.approx(3 / 7)  # gres/gpu:a100_3g.20gb=1,gres/gpu=1
    assert jobs["211"]["gpus"] == pytest.approx(3 / 7)  # gres/gpu:3g.40gb=1,gres/gpu=1
    assert jobs["212"]["gpus"] == pytest.approx(5 / 7)  # 2 x 1g + 1 x 3g, gres/gpu=3
    assert (jobs["212"]["gpu_slots"], jobs["212"]["gpu_type"], jobs["212"]["is_mig"]) == (3, "1g.10gb,3g.40gb", True)
    assert (jobs["210"]["gpu_type"], jobs["211"]["gpu_type"]) == ("3g.20gb", "3g.40gb")
    weighted = by_id(staged(OCTOBER, {"3g.40gb": 0.5, "1g.10gb": 0.125}))
    assert (weighted["210"]["gpus"], weighted["211"]["gpus"], weighted["212"]["gpus"]) == pytest.approx(
        (3 / 7, 0.5, 0.75)
    )


def test_multi_node_list_is_expanded_and_steps_are_not_allocations() -> None:
    job = by_id(staged(OCTOBER))["220"]
    assert job["hosts"] == ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
    assert (job["n_nodes"], job["gpus"], job["n_steps"]) == (4, 32.0, 3)
    assert staged(OCTOBER).filter(pl.col("job_id_raw") == "220").height == 1


def test_month_crossing_run_is_in_both_months_and_prorated_to_the_second() -> None:
    hours = {}
    for name, window in (("october", OCTOBER), ("november", NOVEMBER)):
        run = staged(window).filter(pl.col("job_id") == "230")
        assert run.height == 1
        assert run["start_time"].item() == datetime(2026, 10, 31, 20) and run["end_time"].item() == datetime(
            2026, 11, 1, 4
        )
        clipped = _with_clipped_run(run, *window)
        hours[name] = (clipped["elapsed_seconds"] * clipped["gpus"]).item() / 3600
    assert hours == {"october": 4 * 4.0, "november": 4 * 4.0}


def test_states_cancelled_by_uid_running_open_and_pending_array_range() -> None:
    jobs = by_id(staged(NOVEMBER))
    assert (jobs["240"]["state"], jobs["240"]["state_detail"], jobs["240"]["exit_code"]) == (
        "CANCELLED",
        "by 1234",
        "0:15",
    )
    assert jobs["240"]["gpus"] == 2.0  # ReqTRES has only gres/gpu=2; AllocTRES both: counted once
    running = jobs["250"]
    assert (running["state"], running["is_open"], running["end_time"], running["gpus"]) == ("RUNNING", True, None, 8.0)
    pending = jobs["260_[5-1024]"]
    assert (pending["job_id_raw"], pending["array_job_id"], pending["array_task_id"]) == ("260", "260", "[5-1024]")
    assert (pending["state"], pending["start_time"], pending["hosts"], pending["is_open"]) == (
        "PENDING",
        None,
        [],
        False,
    )
    assert pending["gpus"] == 1.0  # from ReqTRES: nothing allocated yet
    task = jobs["260_4"]
    assert (task["job_id_raw"], task["array_task_id"], task["is_open"]) == ("264", "4", True)


def test_preempted_then_requeued_job_keeps_both_runs() -> None:
    runs = staged(NOVEMBER).filter(pl.col("job_id_raw") == "270").sort("start_time")
    assert runs["state"].to_list() == ["PREEMPTED", "COMPLETED"]
    assert runs["hosts"].to_list() == [["gpu-06"], ["gpu-07"]]
    assert runs["submit_time"].to_list() == [datetime(2026, 11, 10, 8), datetime(2026, 11, 10, 14, 0, 2)]
    assert runs["n_steps"].to_list() == [1, 1]
    clipped = _with_clipped_run(runs, *NOVEMBER)
    assert (clipped["elapsed_seconds"] * clipped["gpus"] / 3600).to_list() == [24.0, 20.0]  # 6 h and 5 h x 4 GPUs


def test_windows_split_the_recording_without_loss() -> None:
    october, november = staged(OCTOBER), staged(NOVEMBER)
    assert sorted(october["job_id"]) == ["201+0", "201+1", "210", "211", "212", "220", "230"]
    assert sorted(november["job_id"]) == ["230", "240", "250", "260_4", "260_[5-1024]", "270", "270"]
    assert date(2026, 11, 1) > october["start_time"].max().date()


def test_staged_jobs_suite_passes_on_the_recording() -> None:
    hosts = [f"gpu-0{i}" for i in range(1, 8)]
    inventory = pl.DataFrame(
        {
            "cluster": ["gpu-prod"] * (8 * 7 + 7 * 2),
            "hostname": [h for h in hosts for _ in range(8)] + ["gpu-mig01"] * 7 + ["gpu-mig02"] * 7,
            "gpu_fraction": [1.0] * 56 + [1 / 7] * 14,
        }
    )
    for window in (OCTOBER, NOVEMBER):
        frame = staged_jobs_frame(staged(window), node_gpu_capacity(inventory))
        result = run_suite_on_frame(staged_jobs_suite(), frame, ["staging", "stg_slurm__jobs"], "gx")
        assert result.passed, result.metadata["failed_expectations"].value
