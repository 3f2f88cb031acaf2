"""The measures summed from DCGM minute rows, in fixed point: one definition for the daily hour
sums (``staging.stg_dcgm__gpu_hour_sums``) and the month's attribution
(``intermediate.int_gpu_minutes_attributed``).

Each measure is a term per minute row of weight ``w`` (SQL over ``stg_dcgm__gpu_minutely``
columns, ``step_seconds`` and ``zero_threshold``), rounded to an integer number of 1e-12 units
(``fixed``) and added as integers. Integer addition does not depend on the order DuckDB's
threads meet the rows, nor on whether rows are added minute by minute or first per hour: an
hour's sum stored by the daily job and the same hour's minute rows added in the month give the
same integer, so the same bits.
"""

from __future__ import annotations

MEAN_SIGNALS = ("gpu_util", "gr_engine_active", "sm_active", "tensor_active", "best")
MEAN_COLUMN = {signal: f"{signal}_mean" for signal in MEAN_SIGNALS} | {"best": "best_signal_mean"}
FIXED_TYPE = "DECIMAL(38,0)"  # how stored sums keep their integers (Parquet has no 128-bit integer)


def _terms() -> dict[str, str]:
    present = "CASE WHEN {} IS NOT NULL THEN w * n_samples ELSE 0 END"
    terms = {"samples": "w * n_samples"}
    for signal in MEAN_SIGNALS:
        mean = MEAN_COLUMN[signal]
        terms[f"{signal}_sum"] = f"w * {mean} * n_samples"
        terms[f"{signal}_n"] = present.format(mean)
    terms["zero_samples"] = "CASE WHEN best_signal_mean <= zero_threshold THEN w * n_samples ELSE 0 END"
    terms["fb_used_mib_sum"] = "w * fb_used_mib_mean * n_samples"
    terms["fb_used_mib_n"] = present.format("fb_used_mib_mean")
    terms["energy_j"] = "w * power_w_mean * n_samples * step_seconds"
    return terms


# Measure name -> its term per minute row (the attribution's output columns, in order, but for
# fb_used_mib_max and split_off_samples).
TERMS = _terms()


def fixed(expression: str) -> str:
    """``expression`` as an integer count of 1e-12 units (HUGEINT)."""
    return f"CAST(round(({expression}) * 1e12) AS HUGEINT)"


def unfixed(integer: str) -> str:
    """A sum of ``fixed`` integers back as a number (DOUBLE)."""
    return f"CAST({integer} AS DOUBLE) / 1e12"
