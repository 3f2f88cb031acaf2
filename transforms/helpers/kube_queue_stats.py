"""Counter increases and histogram quantiles over landed Prometheus samples (pure helpers of
transforms/marts/mart_kube_queue_monthly.py).

- ``increase``: per series, the sum of its sample-to-sample rises; a drop is a counter reset
  and the new value counts as the rise (as PromQL's ``increase`` without extrapolation). The
  first sample of the period is the base: what was counted before it is not in the period.
- ``histogram_quantile``: like PromQL's: cumulative bucket counts by upper bound ``le``; the
  rank q x total falls into the first bucket whose count reaches it, and the value is
  interpolated linearly inside that bucket between its lower bound (the previous ``le``, 0 for
  the first) and its ``le``. A rank in the ``+Inf`` bucket gives the largest finite ``le``.
  So an estimate is off by at most the width of the bucket it falls in.
"""

from __future__ import annotations

import math

import polars as pl


def increase(samples: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per ``by`` (+ series ``labels``): ``increase`` of ``value`` over ``ts``; then summed per ``by``."""
    diff = pl.col("value").diff().over([*by, "labels"], order_by="ts")
    rise = pl.when(diff.is_null()).then(0.0).when(diff < 0).then(pl.col("value")).otherwise(diff)
    return samples.with_columns(_rise=rise).group_by(by).agg(pl.col("_rise").sum().alias("increase"))


def histogram_quantile(q: float, bounds: list[float], counts: list[float]) -> float | None:
    """The q-quantile of cumulative ``counts`` at upper ``bounds`` (any order; +Inf allowed)."""
    pairs = sorted(zip(bounds, counts, strict=True))
    if not pairs or pairs[-1][1] <= 0:
        return None
    total = pairs[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for le, cumulative in pairs:
        if cumulative >= rank:
            if math.isinf(le):
                return lower
            if cumulative == below:
                return le
            return lower + (le - lower) * (rank - below) / (cumulative - below)
        lower, below = le, cumulative
    return lower


def bucket_quantiles(buckets: pl.DataFrame, by: list[str], quantiles: dict[str, float]) -> pl.DataFrame:
    """``buckets``: per ``by`` and ``le`` (float) the period's ``increase``; one column per quantile."""
    rows = []
    for key, group in buckets.group_by(by, maintain_order=True):
        values = dict(zip(by, key, strict=True))
        bounds, counts = group["le"].to_list(), group["increase"].to_list()
        for name, q in quantiles.items():
            values[name] = histogram_quantile(q, bounds, counts)
        rows.append(values)
    schema = {**{c: buckets.schema[c] for c in by}, **{name: pl.Float64() for name in quantiles}}
    return pl.DataFrame(rows, schema=schema, orient="row")
