"""The review's "Data quality" section: the coverage gaps (days a source answered with nothing, with
their cause), what was quarantined (by cluster, source and reason, with an example), the runaway
jobs billed to an inferred end, each with its evidence, and the cards whose observed GPU/MIG
layout differed from the config's inventory (capacity took the observed)."""

from __future__ import annotations

from functools import partial

import polars as pl

from contracts.sources import GAP_CAUSES
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
GAP_COLUMNS = [
    Column("cluster", "cluster"),
    Column("source", "source"),
    Column("first_day", "from"),
    Column("last_day", "to"),
    Column("days", "days", fmt_int, True),
    Column("why", "cause", wrap=True),
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
INVENTORY_COLUMNS = [
    Column("cluster", "cluster"),
    Column("hostname", "host"),
    Column("gpu", "GPU", fmt_int, True),
    Column("what", "difference"),
    Column("declared", "declared", wrap=True),
    Column("observed", "observed", wrap=True),
    Column("hours", "hours", fmt_int, True),
    Column("first_hour", "first hour (UTC)"),
    Column("last_hour", "last hour (UTC)"),
    Column("observed_by", "observed by"),
    Column("advice", "what to change", wrap=True),
]


def data_quality_section(
    quarantine: pl.DataFrame, runaways: pl.DataFrame, gaps: pl.DataFrame, inventory: pl.DataFrame | None = None
) -> Section:
    """Always shown: a month with nothing quarantined says so. ``gaps``: the coverage gaps
    (cluster, source, first_day, last_day, days, cause: a contracts/sources.py GAP_CAUSES code);
    ``inventory``: the data_quality ``inventory_mismatches`` rows (none: nothing to show)."""
    total = int(quarantine["rows"].sum()) if quarantine.height else 0
    values = {"quarantined": f"{total:,}" if total else None, "runaways": None, "gap_days": None, "mismatches": None}
    if gaps.height:
        shown = gaps.with_columns(why=pl.col("cause").replace_strict(GAP_CAUSES, default=pl.col("cause")))
        values |= {"gap_days": int(gaps["days"].sum()), "gap_table": table(shown, GAP_COLUMNS)}
    if inventory is not None and inventory.height:
        cards = inventory.select("cluster", "hostname", "gpu").n_unique()
        values |= {"mismatches": cards, "inventory_table": table(inventory, INVENTORY_COLUMNS)}
    if quarantine.height:
        values["quarantine"] = table(quarantine, QUARANTINE_COLUMNS)
    if runaways.height:
        shown = runaways.with_columns(ended_by=pl.col("end_inferred_from").replace_strict(HOW_ENDED, default=None))
        values |= {"runaways": runaways.height, "runaway_table": table(shown, RUNAWAY_COLUMNS)}
    return Section("data-quality", "Data quality", "sections/data_quality.html", values)
