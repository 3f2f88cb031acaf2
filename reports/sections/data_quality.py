"""The review's "Data quality" section: what was quarantined (by cluster, source and reason, with
an example) and the runaway jobs billed to an inferred end, each with its evidence."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports.html import Column, Section, fmt_float, fmt_int, table

fmt_two = partial(fmt_float, decimals=2)
HOW_ENDED = {
    "time_limit": "its time limit",
    "last_sample": "its last DCGM sample labelled with its job id",
    "month_end": "the end of the month it started in (no time limit, no labelled sample)",
}

QUARANTINE_COLUMNS = [
    Column("cluster", "cluster"),
    Column("source", "source"),
    Column("reason", "reason", wrap=True),
    Column("rows", "rows", fmt_int, True),
    Column("example", "example (where: what)", wrap=True),
]
RUNAWAY_COLUMNS = [
    Column("cluster", "cluster"),
    Column("job_id", "job"),
    Column("user_name", "user"),
    Column("state", "state"),
    Column("start_time", "start (UTC)"),
    Column("end_time", "billed until (UTC)"),
    Column("ended_by", "end inferred from", wrap=True),
    Column("gpus", "GPUs", fmt_two, True),
]


def data_quality_section(quarantine: pl.DataFrame, runaways: pl.DataFrame) -> Section:
    """Always shown: a month with nothing quarantined says so."""
    total = int(quarantine["rows"].sum()) if quarantine.height else 0
    values = {"quarantined": f"{total:,}" if total else None, "runaways": None}
    if quarantine.height:
        values["quarantine"] = table(quarantine, QUARANTINE_COLUMNS)
    if runaways.height:
        shown = runaways.with_columns(ended_by=pl.col("end_inferred_from").replace_strict(HOW_ENDED, default=None))
        values |= {"runaways": runaways.height, "runaway_table": table(shown, RUNAWAY_COLUMNS)}
    return Section("data-quality", "Data quality", "sections/data_quality.html", values)
