"""marts.fct_job_flags: one row per flagged job run and reason, for the monthly review.

Input: the month's ``fct_job_usage`` rows, the time-shape profile of each run
(``int_job_activity_profiled``), the inventory (card memory, GPUs per node, NVLink domains and
switch groups: ``placement_at_start``) and the
thresholds of the config's ``flags`` section. The rules live in ``transforms/marts/flag_rules``
(activity, sizing, placement, schedule: each lists its rules in ``RULES``), their codes in
contracts/flags.py; docs/marts.md describes each with its default threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime

import polars as pl

from contracts.flags import REASON_RANK
from contracts.price_segments import MIG_SUFFIX
from transforms.marts.flag_rules import RULE_SCHEMA, Rule, Thresholds, activity, placement, schedule, sizing
from transforms.marts.flag_rules.costs import with_idle_cost
from transforms.marts.placement_at_start import placement_at_start

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "start_time": pl.Datetime("us"),
    "user_name": pl.String(),
    "account": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "partition_name": pl.String(),
    "job_name": pl.String(),
    "gpus": pl.Float64(),
    "gpu_model": pl.String(),
    "gpu_hours": pl.Float64(),
    "utilization": pl.Float64(),
    "utilization_signal": pl.String(),
    "reason": pl.String(),
    "severity": pl.String(),
    "detail": pl.String(),
    "recommendation": pl.String(),
    "wasted_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "idle_cost": pl.Float64(),
    "currency": pl.String(),
    "month": pl.Date(),
}

RULES: tuple[Rule, ...] = (*activity.RULES, *sizing.RULES, *placement.RULES, *schedule.RULES)
RUN = ["cluster", "job_id_raw", "start_time"]
PROFILE_COLUMNS = ("measured_hours", "steady_share", "tail_zero_hours")


def _cards(inventory: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(memory per cluster x host x MIG profile or null, whole GPUs per cluster x host)."""
    memory = inventory.group_by("cluster", "hostname", "gpu_i_profile").agg(
        pl.col("memory_mib").max().cast(pl.Float64).alias("card_memory_mib")
    )
    per_node = inventory.group_by("cluster", "hostname").agg(
        pl.col("gpu").n_unique().cast(pl.Int64).alias("gpus_per_node")
    )
    return memory, per_node


def prepare(
    usage: pl.DataFrame,
    profile: pl.DataFrame,
    inventory: pl.DataFrame,
    period_end: datetime,
    downtime: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """fct_job_usage rows plus what the rules read: ``_run``, ``n_hosts``, ``mig_profile``,
    ``card_memory_mib``, ``gpus_per_node``, ``memory_efficiency``, ``held_fraction``,
    ``run_end``/``run_seconds`` (end, capped at the period end), the profile columns and the
    placement columns (``placement_at_start``)."""
    memory, per_node = _cards(inventory)
    hosts = pl.col("hosts").fill_null("").str.split(",").list.eval(pl.element().filter(pl.element() != ""))
    frame = usage.with_row_index("_run").with_columns(
        n_hosts=hosts.list.len().cast(pl.Int64),
        hostname=hosts.list.first(),
        mig_profile=pl.col("gpu_model").str.extract(MIG_SUFFIX, 1),
    )
    frame = (
        frame.join(
            memory.rename({"gpu_i_profile": "mig_profile"}),
            on=["cluster", "hostname", "mig_profile"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .join(per_node, on=["cluster", "hostname"], how="left", maintain_order="left")
        .join(profile.select(*RUN, *PROFILE_COLUMNS), on=RUN, how="left", maintain_order="left")
    )
    run_end = pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end))
    card = pl.col("card_memory_mib")
    frame = frame.with_columns(
        memory_efficiency=pl.when(card > 0).then(pl.col("peak_fb_used_mib") / card),
        held_fraction=pl.when(card > 0).then(pl.col("mean_fb_used_mib") / card),
        run_end=run_end,
        run_seconds=(run_end - pl.col("start_time")).dt.total_seconds().cast(pl.Float64),
    )
    placement = placement_at_start(frame, inventory, downtime)
    return frame.join(placement, on="_run", how="left", maintain_order="left")


def flag_rows(jobs: pl.DataFrame, thresholds: Thresholds) -> pl.DataFrame:
    """Every rule's RULE_SCHEMA rows over a prepared frame."""
    return pl.concat([rule(jobs, thresholds) for rule in RULES], how="vertical").cast(RULE_SCHEMA)


def fct_job_flags(
    usage: pl.DataFrame,
    profile: pl.DataFrame,
    inventory: pl.DataFrame,
    thresholds: Thresholds,
    prices: pl.DataFrame | Mapping[str, float],
    currency: str,
    period_end: datetime,
    month: date,
    downtime: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """SCHEMA rows, ordered by cluster, job_id, start_time and reason (registry order).

    ``usage``: fct_job_usage rows of ``month``; ``profile``: int_job_activity_profiled rows;
    ``inventory``: cluster, hostname, gpu, gpu_i_profile, memory_mib, gpu_model, nvlink_domain,
    switch_group (the config inventory frame);
    ``prices``: list price segments per GPU model (``config.rates.price_frame``; a run's
    idle GPU-hours are priced over its held interval, split at price changes), or one price per
    model for all time; MIG runs are priced at their base model; ``downtime``: the month's
    downtime intervals (hosts out of service are not free for ``placement_at_start``).
    """
    jobs = prepare(usage, profile, inventory, period_end, downtime)
    flags = flag_rows(jobs, thresholds)
    joined = flags.join(jobs.drop("month"), on="_run", how="left").with_columns(month=pl.lit(month))
    priced = with_idle_cost(joined, prices, currency, month)
    ordered = priced.with_columns(
        _reason=pl.col("reason").replace_strict(REASON_RANK, return_dtype=pl.Int32),
    ).sort(["cluster", "job_id", "start_time", "job_id_raw", "_reason"], nulls_last=False)
    return ordered.select(list(SCHEMA)).cast(SCHEMA)
