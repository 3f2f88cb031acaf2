"""Late accounting: which landed sacct days are read again, and when a new read is a change."""

from __future__ import annotations

from datetime import date

import polars as pl

from contracts.schemas import RAW_SACCT_SCHEMA
from pipelines.sacct_lookback import changed, earlier_days, open_records
from tests.unit.test_stg_slurm__jobs import line, raw

D5 = date(2024, 3, 10)


def rows(*lines: str) -> pl.DataFrame:
    return raw((D5, list(lines)))


RUNNING = line("100", state="RUNNING", end_time="Unknown", elapsed_raw="600")
DONE = line("100", state="COMPLETED", end_time="2024-03-10T05:00:00")


def test_the_lookback_is_the_days_before_oldest_first() -> None:
    assert earlier_days(date(2026, 3, 1), 2) == [date(2026, 2, 27), date(2026, 2, 28)]
    assert earlier_days(date(2026, 3, 1), 0) == []


def test_a_job_that_ended_since_is_a_change() -> None:
    assert changed(rows(RUNNING, line("101")), rows(DONE, line("101")))


def test_the_same_records_in_another_order_or_read_from_elsewhere_are_no_change() -> None:
    landed = rows(line("101"), RUNNING)
    again = rows(RUNNING, line("101")).with_columns(source=pl.lit("sacct -M c1 -S ..."), line_no=pl.lit(7))
    assert not changed(landed, again)


def test_a_running_job_s_elapsed_time_counting_up_is_no_change() -> None:
    assert not changed(rows(RUNNING), rows(RUNNING.replace("|600|", "|4200|")))


def test_a_record_more_or_fewer_is_a_change() -> None:
    assert changed(rows(line("101")), rows(line("101"), line("102")))
    assert changed(rows(line("101"), line("102")), rows(line("101")))
    assert changed(pl.DataFrame(schema=RAW_SACCT_SCHEMA), rows(line("101")))


def test_open_records_are_unfinished_or_without_an_end() -> None:
    frame = rows(
        RUNNING,
        line("101", state="PENDING", start_time="Unknown", end_time="Unknown", alloc_tres=""),
        line("102", state="CANCELLED by 0", end_time="Unknown"),  # a runaway: its End may be fixed
        line("103"),
        line("104", state="CANCELLED by 1234"),
        line("105", state="TIMEOUT"),
    )
    assert open_records(frame)["job_id_raw"].to_list() == ["100", "101", "102"]
