"""Differences between a closed month's booked charges and its charges computed now.

Used by ``fct_chargeback_jobs`` and ``fct_chargeback_focus`` for months already closed:
booked = every ledger row of the charge month (the original rows and earlier corrections),
current = the rows the month's data gives now. Per key, the difference of each measure
(current - booked, exact: decimals are compared as scaled integers) becomes one correction
row; keys whose measures all agree give no row, so a rerun without new data adds nothing and
booked + corrections = current, never counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from transforms.helpers.charge_money import scaled_decimal, to_scaled_int


def _summed(frame: pl.DataFrame, keys: Sequence[str], measures: Mapping[str, int]) -> pl.DataFrame:
    ints = [
        (to_scaled_int(pl.col(m), s) if frame.schema[m].is_decimal() else pl.col(m).cast(pl.Int64))
        .fill_null(0)
        .alias(m)
        for m, s in measures.items()
    ]
    others = [c for c in frame.columns if c not in keys and c not in measures]
    return (
        frame.with_columns(ints)
        .sort(frame.columns, nulls_last=True)
        .group_by(keys, maintain_order=True)
        .agg(*[pl.col(m).sum() for m in measures], *[pl.col(c).first() for c in others])
    )


def differences(
    current: pl.DataFrame, booked: pl.DataFrame, keys: Sequence[str], measures: Mapping[str, int]
) -> pl.DataFrame:
    """Rows (current's columns) holding current - booked per key where any measure differs.

    ``measures`` maps a measure column to its decimal scale (0 for integer columns); other
    columns are taken from the current row, else from the booked one."""
    now = _summed(current, keys, measures)
    before = _summed(booked.select(current.columns).cast(current.schema), keys, measures)
    joined = now.join(before, on=list(keys), how="full", coalesce=True, suffix="_booked", nulls_equal=True)
    delta = {m: pl.col(m).fill_null(0) - pl.col(f"{m}_booked").fill_null(0) for m in measures}
    others = [c for c in current.columns if c not in keys and c not in measures]
    rows = joined.with_columns(
        *[d.alias(m) for m, d in delta.items()],
        *[pl.coalesce(pl.col(c), pl.col(f"{c}_booked")).alias(c) for c in others],
    ).filter(pl.any_horizontal(pl.col(m) != 0 for m in measures))
    return rows.with_columns(
        (scaled_decimal(pl.col(m), s) if current.schema[m].is_decimal() else pl.col(m)).cast(current.schema[m]).alias(m)
        for m, s in measures.items()
    ).select(current.columns)
