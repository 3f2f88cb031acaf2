"""Rules on where an allocation was placed: MULTINODE_FRAGMENTED (a multi-host run spread over
more NVLink domains or switch groups than the free GPUs at its start needed).

The topology and the free capacity at a run's start come from
``transforms.marts.placement_at_start`` (columns joined by ``fct_job_flags.prepare``)."""

from __future__ import annotations

import polars as pl

from transforms.marts.flag_rules import Rule, Thresholds, emit


def _detail() -> pl.Expr:
    used = pl.format(
        "{} GPUs on {} hosts in {} NVLink domain(s) ({})",
        pl.col("gpus").round(0).cast(pl.Int64),
        pl.col("n_hosts"),
        pl.col("domains_used"),
        pl.col("domain_names"),
    )
    under = pl.format(" under {} switch group(s) ({})", pl.col("groups_used"), pl.col("group_names"))
    room = pl.format(
        "; at its start {} NVLink domain(s) had room for it ({}: {} GPUs free; the freest, {}, had {} free)",
        pl.col("min_domains"),
        pl.col("best_domains"),
        pl.col("best_domains_free"),
        pl.col("freest_domain"),
        pl.col("freest_domain_free"),
    )
    group_room = pl.format(
        "; switch group {} alone had {} GPUs free", pl.col("freest_group"), pl.col("freest_group_free")
    )
    return pl.concat_str([used, under, room, group_room], ignore_nulls=True)


def _recommendation() -> pl.Expr:
    one_switch = pl.when(pl.col("min_groups") == 1).then(pl.lit(" under one switch group")).otherwise(pl.lit(""))
    return pl.format(
        "The scheduler could have placed it in {} NVLink domain(s){}: ask for whole nodes "
        "(--nodes={} --gpus-per-node={}) and one leaf switch (--switches=1) so the GPUs talk over "
        "NVLink instead of the network; if the job asked for that, the scheduler needs the site's "
        "topology (Slurm topology.conf) to pack it.",
        pl.col("min_domains"),
        one_switch,
        (pl.col("gpus") / pl.col("gpus_per_node")).ceil().cast(pl.Int64),
        pl.col("gpus_per_node"),
    )


def multinode_fragmented(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """A whole-GPU run on several hosts spread over more NVLink domains, or more switch groups,
    than the fewest whose free GPUs at its start would have held it: low. No threshold: the
    topology and the free capacity decide. Wasted: 0 (the GPUs worked; they talked slower)."""
    del t
    more_domains = (pl.col("domains_used") > pl.col("min_domains")).fill_null(False)
    more_groups = (pl.col("groups_used") > pl.col("min_groups")).fill_null(False)
    spread = jobs.filter(more_domains | more_groups)
    return emit(spread, "MULTINODE_FRAGMENTED", _detail(), pl.lit(0.0), recommendation=_recommendation())


RULES: tuple[Rule, ...] = (multinode_fragmented,)
