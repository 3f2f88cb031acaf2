"""The review's "Data quality" section: what was quarantined (by cluster, source and reason, with
an example) and the runaway jobs billed to an inferred end, each with its evidence."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports.html import Column, Section, fmt_float, fmt_int, join, paragraph, render_table

fmt_two = partial(fmt_float, decimals=2)
HOW_ENDED = {
    "time_limit": "its time limit",
    "last_sample": "its last DCGM sample labelled with its job id",
    "month_end": "the end of the month it started in (no time limit, no labelled sample)",
}

QUARANTINE_COLUMNS = [
    Column("cluster", "cluster"), Column("source", "source"), Column("reason", "reason", wrap=True),
    Column("rows", "rows", fmt_int, True), Column("example", "example (where: what)", wrap=True),
]  # fmt: skip
RUNAWAY_COLUMNS = [
    Column("cluster", "cluster"), Column("job_id", "job"), Column("user_name", "user"), Column("state", "state"),
    Column("start_time", "start (UTC)"), Column("end_time", "billed until (UTC)"),
    Column("ended_by", "end inferred from", wrap=True), Column("gpus", "GPUs", fmt_two, True),
]  # fmt: skip


def data_quality_section(quarantine: pl.DataFrame, runaways: pl.DataFrame) -> Section:
    """Always shown: a month with nothing quarantined says so."""
    total = int(quarantine["rows"].sum()) if quarantine.height else 0
    parts = [paragraph(
        f"{total:,} input rows or values were quarantined this month and are not billed; each has a reason "
        "and its location in raw.quarantine. Reason codes are explained in docs/slurm.md."
        if total else "Nothing was quarantined this month.")]
    if quarantine.height:
        parts.append(render_table(quarantine, QUARANTINE_COLUMNS, empty="Nothing quarantined."))
    if runaways.height:
        shown = runaways.with_columns(ended_by=pl.col("end_inferred_from").replace_strict(HOW_ENDED, default=None))
        parts.append(paragraph(
            f"{runaways.height} runs ended in a final state with End 'Unknown' (slurmdbd runaway jobs). "
            "Each is billed only up to the earliest of its time limit, its last labelled DCGM sample and the end "
            "of the month it started in; check them with `sacctmgr show runawayjobs`."))
        parts.append(render_table(shown, RUNAWAY_COLUMNS, empty="No runaway jobs."))
    return Section("data-quality", "Data quality", join(parts))
