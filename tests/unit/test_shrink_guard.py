"""The retention guard's comparison: what each raw table counts, when a new read is refused, and
what the refusal says."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from contracts.runs import FORCE_SHRINK_FLAG, FORCE_SHRINK_TAG
from pipelines.shrink_guard import MEASURES, Shrink, count, shrinks
from pipelines.tables import (
    RAW_DCGM_SAMPLES,
    RAW_KUBE_NODE_RUNS,
    RAW_KUBE_SERIES,
    RAW_SLURM_SACCT,
    STG_DCGM__GPU_XID,
    STG_SLURM__DOWNTIME,
)


@pytest.mark.parametrize(
    ("landed", "new", "refused"),
    [
        (None, 0, False),  # nothing landed: any read lands
        (0, 0, False),
        (100, 100, False),  # the same
        (100, 101, False),  # more: the source holds more than when the day landed
        (100, 99, True),  # any decrease, however small
        (100, 0, True),  # the server lost the whole day
    ],
)
def test_a_read_is_refused_exactly_when_it_holds_fewer(landed: int | None, new: int, refused: bool) -> None:
    assert shrinks(landed, new) is refused


def test_sacct_counts_jobs_not_rows() -> None:
    ids = ["100", "100.batch", "100.extern", "101", "101.0", "102_3", "103+1", "103+1.batch"]
    assert count(RAW_SLURM_SACCT, pl.DataFrame({"job_id_raw": ids})) == 4
    # a requeued job's two runs are one job
    assert count(RAW_SLURM_SACCT, pl.DataFrame({"job_id_raw": ["100", "100", "100.batch"]})) == 1
    assert count(RAW_SLURM_SACCT, pl.DataFrame({"job_id_raw": []}, schema={"job_id_raw": pl.String})) == 0


def test_samples_are_rows_and_kube_counts_the_series_samples() -> None:
    assert count(RAW_DCGM_SAMPLES, pl.DataFrame({"gpu": [0, 1, 2]})) == 3
    assert count(RAW_KUBE_SERIES, pl.DataFrame({"n_samples": [2880, 10, 1]})) == 2891
    assert count(RAW_KUBE_SERIES, pl.DataFrame({"n_samples": []}, schema={"n_samples": pl.Int64})) == 0


def test_every_table_landed_from_a_source_has_a_measure() -> None:
    landed = {RAW_DCGM_SAMPLES, RAW_SLURM_SACCT, RAW_KUBE_SERIES, RAW_KUBE_NODE_RUNS, STG_SLURM__DOWNTIME}
    landed |= {STG_DCGM__GPU_XID}  # read from the server again on every build of its day
    assert set(MEASURES) == {table.name for table in landed}


def test_xid_counts_down_time_not_intervals() -> None:
    day = datetime(2026, 2, 5)
    whole = pl.DataFrame({"start_ts": [day], "end_ts": [day + timedelta(days=1)]})
    # the server lost 08:00-16:00: two intervals instead of one, 8 GPU-hours fewer down
    split = pl.DataFrame(
        {"start_ts": [day, day + timedelta(hours=16)], "end_ts": [day + timedelta(hours=8), day + timedelta(days=1)]}
    )
    assert count(STG_DCGM__GPU_XID, whole) == 86_400 and count(STG_DCGM__GPU_XID, split) == 57_600
    assert shrinks(count(STG_DCGM__GPU_XID, whole), count(STG_DCGM__GPU_XID, split))
    text = Shrink(STG_DCGM__GPU_XID.name, "alpha", date(2026, 2, 5), 86_400, 57_600).refusal()
    assert "holds 86,400 GPU-seconds down for XID errors, the new read only 57,600" in text
    assert "retention" in text and "the day before it was landed since" in text


def test_downtime_counts_intervals_and_names_slurmdbds_purge() -> None:
    assert count(STG_SLURM__DOWNTIME, pl.DataFrame({"hostname": ["a", "a", "b"]})) == 3
    text = Shrink(STG_SLURM__DOWNTIME.name, "alpha", date(2026, 2, 5), 4, 1).refusal()
    assert "holds 4 node event and reservation intervals, the new read only 1" in text
    assert "PurgeEventAfter" in text and "PurgeResvAfter" in text


def test_the_refusal_names_both_counts_where_the_likely_cause_and_how_to_force() -> None:
    text = Shrink(RAW_DCGM_SAMPLES.name, "alpha", date(2026, 2, 5), 23_040, 11_520).refusal()
    for part in [
        "raw.dcgm_samples",
        "cluster 'alpha'",
        "day 2026-02-05",
        "holds 23,040 samples",
        "only 11,520",
        "retention",
        "selector",
        "landed rows and their landing are kept",
        f"cardhours run --month 2026-02 --reingest 2026-02-05 {FORCE_SHRINK_FLAG}",
        f"{FORCE_SHRINK_TAG}=true",
    ]:
        assert part in text, part
    jobs = Shrink(RAW_SLURM_SACCT.name, "alpha", date(2026, 2, 5), 12, 3).refusal()
    assert "holds 12 jobs, the new read only 3 (9 fewer)" in jobs and "PurgeJobAfter" in jobs
