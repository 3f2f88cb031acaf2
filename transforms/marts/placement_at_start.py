"""Where a multi-host run was placed, and where it could have gone at its start.

Topology (the config inventory, whole GPUs only): a host's **NVLink domain** is the node
group's ``nvlink_domain`` when set (one domain spanning hosts, as a rack-scale NVL72), else
the host itself (an HGX/DGX node: NVLink joins the GPUs inside the host); its **switch group**
is the node group's ``switch_group`` (the hosts under one leaf switch), null when not declared.

Free capacity at a run's start: each candidate host's whole GPUs minus the GPUs other runs
held at that instant (runs of the month with ``start_time <= start < run_end``; sacct gives a
run's GPU total, so a run holds ``gpus / hosts`` on each of its hosts), and minus the GPUs out of
service then (a ``down`` or ``planned_down`` downtime interval covering the instant: the whole
host for a host-wide one, else its GPUs), rounded down to whole GPUs. Reserved hosts count as
free: a reservation may be the run's own (its account's), which the intervals do not say.
Candidate hosts: those of the run's GPU model on which runs of its partition ran in the month
(the whole cluster's hosts of that model when it has no partition, as on Kubernetes).

Per multi-host whole-GPU run (``_run``): the domains and switch groups it used, and the fewest
domains and groups whose free GPUs would have held it then (taking the freest first), with
their names and free GPUs. Not materialized: ``fct_job_flags`` computes it.
"""

from __future__ import annotations

import polars as pl

from contracts.capacity_states import DOWN, PLANNED_DOWN

SCHEMA: dict[str, pl.DataType] = {
    "_run": pl.UInt32(),
    "domains_used": pl.Int64(),
    "domain_names": pl.String(),
    "groups_used": pl.Int64(),  # null when a host's switch group is not declared
    "group_names": pl.String(),
    "min_domains": pl.Int64(),  # null when the free GPUs at start would not have held it
    "best_domains": pl.String(),  # those fewest domains, freest first
    "best_domains_free": pl.Int64(),
    "freest_domain": pl.String(),
    "freest_domain_free": pl.Int64(),
    "min_groups": pl.Int64(),
    "freest_group": pl.String(),
    "freest_group_free": pl.Int64(),
}
_EPS = 1e-9


def host_topology(inventory: pl.DataFrame) -> pl.DataFrame:
    """Per cluster and host with whole GPUs: gpu_model, host_gpus, domain, switch_group."""
    return (
        inventory.filter(pl.col("gpu_i_profile").is_null())
        .group_by("cluster", "hostname")
        .agg(
            pl.col("gpu_model").first(),
            pl.col("gpu").n_unique().cast(pl.Float64).alias("host_gpus"),
            pl.col("nvlink_domain").first(),
            pl.col("switch_group").first(),
        )
        .with_columns(domain=pl.coalesce("nvlink_domain", "hostname"))
        .drop("nvlink_domain")
    )


def _held(jobs: pl.DataFrame) -> pl.DataFrame:
    """One row per run and host: the GPUs it held there (its GPUs split evenly over its hosts)."""
    hosts = pl.col("hosts").fill_null("").str.split(",").list.eval(pl.element().filter(pl.element() != ""))
    return (
        jobs.filter(pl.col("start_time").is_not_null())
        .select("_run", "cluster", "partition_name", "start_time", "run_end", "gpus", hostname=hosts)
        .with_columns(held=pl.col("gpus") / pl.col("hostname").list.len())
        .explode("hostname")
        .filter(pl.col("hostname").is_not_null())
    )


def _candidates(jobs: pl.DataFrame, held: pl.DataFrame, topology: pl.DataFrame) -> pl.DataFrame:
    """Whole-GPU runs on several hosts, all in the topology: _run, cluster, partition_name, start_time, gpus, model."""
    multi = jobs.filter(
        pl.col("mig_profile").is_null()
        & (pl.col("gpu_hours") > 0)
        & (pl.col("n_hosts") > 1)
        & pl.col("start_time").is_not_null()
    ).select("_run")
    on_hosts = held.join(multi, on="_run").join(topology, on=["cluster", "hostname"], how="left")
    known = on_hosts.group_by("_run").agg(pl.col("domain").is_not_null().all().alias("_known"))
    return (
        on_hosts.join(known.filter("_known"), on="_run")
        .group_by("_run", "cluster", "partition_name", "start_time", "gpus")
        .agg(pl.col("gpu_model").first().alias("model"))
    )


def _used(held: pl.DataFrame, candidates: pl.DataFrame, topology: pl.DataFrame) -> pl.DataFrame:
    groups_known = pl.col("switch_group").is_not_null().all()
    return (
        held.join(candidates.select("_run"), on="_run")
        .join(topology, on=["cluster", "hostname"])
        .group_by("_run")
        .agg(
            pl.col("domain").n_unique().cast(pl.Int64).alias("domains_used"),
            pl.col("domain").unique().sort().str.join(", ").alias("domain_names"),
            pl.when(groups_known).then(pl.col("switch_group").n_unique().cast(pl.Int64)).alias("groups_used"),
            pl.when(groups_known).then(pl.col("switch_group").unique().sort().str.join(", ")).alias("group_names"),
        )
    )


def _held_levels(held: pl.DataFrame) -> pl.DataFrame:
    """Per cluster, host and instant a run started or ended: the GPUs runs held from then on."""
    starts = held.select("cluster", "hostname", ts=pl.col("start_time"), delta=pl.col("held"))
    ends = held.select("cluster", "hostname", ts=pl.col("run_end"), delta=-pl.col("held"))
    return (
        pl.concat([starts, ends], how="vertical")
        .group_by("cluster", "hostname", "ts")
        .agg(pl.col("delta").sum())
        .sort("cluster", "hostname", "ts")
        .with_columns(level=pl.col("delta").cum_sum().over("cluster", "hostname"))
        .sort("ts")
    )


def _out_at_start(pool: pl.DataFrame, downtime: pl.DataFrame | None) -> pl.DataFrame:
    """Per pool row (``_run``, hostname): the GPUs out of service at the run's start (``out``)."""
    keys = pool.select("_run", "cluster", "hostname", "start_time", "host_gpus")
    if downtime is None or downtime.is_empty():
        return keys.select("_run", "hostname", out=pl.lit(0.0))
    out = downtime.filter(pl.col("state").is_in([DOWN, PLANNED_DOWN])).select(
        "cluster", "hostname", "gpu", "start_ts", "end_ts"
    )
    covering = keys.join(out, on=["cluster", "hostname"]).filter(
        (pl.col("start_ts") <= pl.col("start_time")) & (pl.col("start_time") < pl.col("end_ts"))
    )
    per_host = covering.group_by("_run", "hostname").agg(
        pl.when(pl.col("gpu").is_null().any())
        .then(pl.col("host_gpus").first())
        .otherwise(pl.min_horizontal(pl.col("gpu").drop_nulls().n_unique(), pl.col("host_gpus").first()))
        .cast(pl.Float64)
        .alias("out")
    )
    joined = keys.select("_run", "hostname").join(per_host, on=["_run", "hostname"], how="left")
    return joined.with_columns(pl.col("out").fill_null(0.0))


def _free_hosts(
    held: pl.DataFrame, candidates: pl.DataFrame, topology: pl.DataFrame, downtime: pl.DataFrame | None
) -> pl.DataFrame:
    """Per candidate run and candidate host: whole GPUs not held by other runs at its start
    (the held level at that instant, a run ending then already gone, minus the run's own) and
    not out of service then."""
    partition_hosts = held.select("cluster", "partition_name", "hostname").unique()
    with_partition = candidates.filter(pl.col("partition_name").is_not_null()).join(
        partition_hosts, on=["cluster", "partition_name"]
    )
    without = candidates.filter(pl.col("partition_name").is_null()).join(
        topology.select("cluster", "hostname"), on="cluster"
    )
    pool = (
        pl.concat([with_partition, without], how="vertical")
        .join(topology, on=["cluster", "hostname"])
        .filter(pl.col("gpu_model") == pl.col("model"))
        .sort("start_time")
    )
    own = held.select("_run", "hostname", own=pl.col("held"))
    at_start = pool.join_asof(
        _held_levels(held).select("cluster", "hostname", "ts", "level"),
        left_on="start_time",
        right_on="ts",
        by=["cluster", "hostname"],
        strategy="backward",
        check_sortedness=False,  # both sorted by the instant: within each host too
    ).join(own, on=["_run", "hostname"], how="left")
    at_start = at_start.join(_out_at_start(at_start, downtime), on=["_run", "hostname"], how="left")
    busy = pl.col("level").fill_null(0.0) - pl.col("own").fill_null(0.0) + pl.col("out")
    free = (pl.col("host_gpus") - busy + _EPS).floor().clip(lower_bound=0.0)
    return at_start.with_columns(free=free)


def _fewest(free_hosts: pl.DataFrame, candidates: pl.DataFrame, key: str, prefix: str) -> pl.DataFrame:
    """The fewest ``key`` units (freest first) whose free GPUs hold each run, their names and free sum."""
    units = (
        free_hosts.filter(pl.col(key).is_not_null())
        .group_by("_run", key)
        .agg(pl.col("free").sum())
        .join(candidates.select("_run", "gpus"), on="_run")
        .sort(["_run", "free", key], descending=[False, True, False])
        .with_columns(_before=pl.col("free").cum_sum().over("_run") - pl.col("free"))
    )
    taken = units.filter(pl.col("_before") < pl.col("gpus") - _EPS)
    enough = units.group_by("_run").agg((pl.col("free").sum() >= pl.col("gpus").first() - _EPS).alias("_enough"))
    freest = units.group_by("_run", maintain_order=True).first().select("_run", key, "free")
    return (
        taken.group_by("_run")
        .agg(
            pl.len().cast(pl.Int64).alias(f"min_{prefix}s"),
            pl.col(key).str.join(", ").alias(f"best_{prefix}s"),
            pl.col("free").sum().cast(pl.Int64).alias(f"best_{prefix}s_free"),
        )
        .join(enough, on="_run")
        .with_columns(pl.when("_enough").then(pl.col(f"min_{prefix}s")).alias(f"min_{prefix}s"))
        .drop("_enough")
        .join(
            freest.rename({key: f"freest_{prefix}", "free": f"freest_{prefix}_free"}).with_columns(
                pl.col(f"freest_{prefix}_free").cast(pl.Int64)
            ),
            on="_run",
        )
    )


def placement_at_start(
    jobs: pl.DataFrame, inventory: pl.DataFrame, downtime: pl.DataFrame | None = None
) -> pl.DataFrame:
    """SCHEMA rows, one per multi-host whole-GPU run whose hosts are all in the inventory.

    ``jobs``: the prepared flag frame (``_run``, cluster, partition_name, start_time,
    ``run_end``, gpus, hosts, ``n_hosts``, ``mig_profile``, gpu_hours) of every run of the
    month; ``inventory``: cluster, hostname, gpu, gpu_i_profile, gpu_model, nvlink_domain,
    switch_group (the config inventory frame); ``downtime``: the month's downtime intervals
    (``DOWNTIME_INTERVAL``; None: no host was out of service)."""
    topology = host_topology(inventory)
    held = _held(jobs)
    candidates = _candidates(jobs, held, topology)
    free_hosts = _free_hosts(held, candidates, topology, downtime)
    domains = _fewest(free_hosts, candidates, "domain", "domain")
    groups = _fewest(free_hosts, candidates, "switch_group", "group").select(
        "_run", "min_groups", "freest_group", "freest_group_free"
    )
    out = _used(held, candidates, topology).join(domains, on="_run", how="left").join(groups, on="_run", how="left")
    return out.select(list(SCHEMA)).cast(SCHEMA)
