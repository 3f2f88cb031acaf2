"""Helpers of the Kubernetes staging transforms: per-pod facts out of ``raw.kube_series`` rows.

Every helper takes the rows of one metric (RAW_KUBE_SERIES_SCHEMA, possibly several days)
and returns one row per pod key ``(cluster, namespace, pod, uid)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from config.inventory import MIG_SLICES_PER_GPU

POD_KEY = ["cluster", "namespace", "pod", "uid"]


def label(name: str) -> pl.Expr:
    """One label out of the ``labels`` JSON (null when absent)."""
    return pl.col("labels").str.json_path_match(f"$.{name}")


def across_days(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per series (key, metric, labels) over all days given."""
    return (
        rows.sort("last_ts")
        .group_by([*POD_KEY, "metric", "labels"], maintain_order=True)
        .agg(
            pl.col("first_ts").min(),
            pl.col("last_ts").max(),
            pl.col("n_samples").sum(),
            pl.col("last_value").last(),
            pl.col("max_value").max(),
            pl.col("last_nonzero_ts").max(),
        )
    )


def epoch_value(name: str) -> pl.Expr:
    """A Unix-seconds gauge (kube_pod_created ...) as a naive UTC datetime, per pod."""
    micros = (pl.col("last_value") * 1_000_000).round().cast(pl.Int64)
    return pl.from_epoch(micros, time_unit="us").sort_by("last_ts").last().alias(name)


def pod_times(series: pl.DataFrame, metrics: Mapping[str, str]) -> pl.DataFrame:
    """created/scheduled/start/completion times; first/last sample of any series of the pod."""
    out = series.group_by(POD_KEY).agg(first_seen=pl.col("first_ts").min(), last_seen=pl.col("last_ts").max())
    for column, metric in metrics.items():
        times = series.filter(pl.col("metric") == metric).group_by(POD_KEY).agg(epoch_value(column))
        out = out.join(times, on=POD_KEY, how="left", nulls_equal=True)
    return out


def pod_phase(phases: pl.DataFrame) -> pl.DataFrame:
    """The last phase (the one whose 0/1 series was 1 last) and the last Running sample."""
    with_phase = phases.with_columns(phase=label("phase")).filter(pl.col("last_nonzero_ts").is_not_null())
    return with_phase.group_by(POD_KEY).agg(
        phase=pl.col("phase").sort_by("last_nonzero_ts").last(),
        last_running=pl.col("last_nonzero_ts").filter(pl.col("phase") == "Running").max(),
    )


def pod_info(info: pl.DataFrame) -> pl.DataFrame:
    """Owner, priority class and node (the last non-empty node label)."""
    parsed = info.with_columns(
        owner_kind=label("created_by_kind"),
        owner_name=label("created_by_name"),
        priority_class=label("priority_class"),
        node=label("node"),
    )
    return (
        parsed.sort("last_ts")
        .group_by(POD_KEY)
        .agg(
            pl.col("owner_kind").drop_nulls().last(),
            pl.col("owner_name").drop_nulls().last(),
            pl.col("priority_class").drop_nulls().last(),
            pl.col("node").drop_nulls().last(),
        )
    )


def mig_profile(resource: pl.Expr, prefix: str) -> pl.Expr:
    """``nvidia_com_mig_3g_40gb`` -> ``3g.40gb``, ``nvidia_com_mig_1g_10gb_me`` -> ``1g.10gb+me`` (the
    media-extension profile, whose ``+`` kube-state-metrics writes as ``_``); null for other resources."""
    body = resource.str.strip_prefix(prefix).str.replace(r"_me$", "+me")
    return pl.when(resource.str.starts_with(prefix)).then(body.str.replace("_", ".", literal=True))


def mig_weight(profile: pl.Expr, weights: Mapping[str, float]) -> pl.Expr:
    """The configured weight (rates.mig_profile_weights, as the Slurm path), else slices / 7."""
    slices = profile.str.extract(r"^([1-7])g\.[1-9][0-9]*gb(\+me)?$", 1).cast(pl.Float64)
    configured = profile.replace_strict(dict(weights), default=None, return_dtype=pl.Float64) if weights else None
    default = slices / MIG_SLICES_PER_GPU
    return default if configured is None else pl.coalesce(configured, default)


def pod_gpus(requests: pl.DataFrame, gpu_resource: str, mig_prefix: str, weights: Mapping[str, float]) -> pl.DataFrame:
    """GPU requests per pod: devices (``gpu_slots``), charged ``gpus`` (MIG as fractions),
    the resource and MIG profile; ``bad_resource`` names a MIG resource that is no profile."""
    parsed = requests.with_columns(container=label("container"), resource=label("resource"))
    parsed = parsed.filter((pl.col("resource") == gpu_resource) | pl.col("resource").str.starts_with(mig_prefix))
    per_container = parsed.group_by([*POD_KEY, "container", "resource"]).agg(count=pl.col("last_value").max())
    per_container = per_container.filter(pl.col("count") != 0)  # a request of 0 GPUs is no GPU request
    profile = mig_profile(pl.col("resource"), mig_prefix)
    weighted = per_container.with_columns(
        mig_profile=profile, weight=pl.when(profile.is_null()).then(1.0).otherwise(mig_weight(profile, weights))
    )
    return weighted.group_by(POD_KEY).agg(
        gpus=(pl.col("count") * pl.col("weight")).sum(),
        gpu_slots=pl.col("count").sum().cast(pl.Int32),
        gpu_type=pl.col("resource").sort().str.join(","),
        mig_profile=pl.col("mig_profile").drop_nulls().first(),
        bad_resource=pl.col("resource")
        .filter(pl.col("mig_profile").is_not_null() & pl.col("weight").is_null())
        .first(),
    )


def labels_of(rows: pl.DataFrame, keys: list[str], names: list[str], prefix: str) -> pl.DataFrame:
    """Chosen label values per key, columns ``<prefix><name>`` (the latest row wins)."""
    values = rows.with_columns(label(n).alias(prefix + n) for n in names)
    return values.sort("last_ts").group_by(keys).agg(pl.col(prefix + n).drop_nulls().last() for n in names)
