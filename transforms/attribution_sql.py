"""SQL fragments of int_gpu_minutes_attributed: the two joins of minute rows to runs and the
weighted, fixed-point measures (the rules are in that module's docstring)."""

from __future__ import annotations

MEAN_SIGNALS = ("gpu_util", "gr_engine_active", "sm_active", "tensor_active", "best")
MEAN_COLUMN = {signal: f"{signal}_mean" for signal in MEAN_SIGNALS} | {"best": "best_signal_mean"}

# The two joins of minute rows to runs (``join``): runs exploded per hour and equi-joined on
# (hpc_job | host, hour) + the overlap filter, or without hour buckets: an ASOF join of
# labelled minutes to the job's latest run started before the minute's end, and a join on
# host + the overlap filter (a range join per host). Both give the same rows.
LABEL_JOINS = {
    "hour_bucket": """
labelled AS (
    SELECT m.*, r.job_id_raw, r.start_time,
           CASE WHEN r.job_id_raw IS NULL THEN 'unattributed' ELSE 'hpc_job_label' END AS attribution_method,
           coalesce(s.overlap / s.total, 1.0) AS w
    FROM minutes m LEFT JOIN run_hours r
      ON r.job_id_raw = m.hpc_job AND r.hour = m.hour
     AND m.minute < r.run_end AND m.minute + INTERVAL 1 MINUTE > r.run_start
    LEFT JOIN split_minutes s
      ON s.job_id_raw = r.job_id_raw AND s.start_time = r.start_time AND s.minute = m.minute
    WHERE m.hpc_job IS NOT NULL
),
""",
    "interval": """
labelled AS (
    SELECT m.* EXCLUDE (minute_end),
           CASE WHEN m.minute < r.run_end THEN r.job_id_raw END AS job_id_raw,
           CASE WHEN m.minute < r.run_end THEN r.start_time END AS start_time,
           CASE WHEN m.minute < r.run_end THEN 'hpc_job_label' ELSE 'unattributed' END AS attribution_method,
           1.0 AS w
    FROM (SELECT u.*, u.minute + INTERVAL 1 MINUTE AS minute_end FROM minutes u
          ANTI JOIN split_minutes s ON s.job_id_raw = u.hpc_job AND s.minute = u.minute
          WHERE u.hpc_job IS NOT NULL) m
    ASOF LEFT JOIN (SELECT * FROM runs WHERE run_end > run_start) r
      ON r.job_id_raw = m.hpc_job AND m.minute_end > r.run_start
    UNION ALL BY NAME
    SELECT m.*, s.job_id_raw, s.start_time, 'hpc_job_label' AS attribution_method, s.overlap / s.total AS w
    FROM minutes m JOIN split_minutes s ON s.job_id_raw = m.hpc_job AND s.minute = m.minute
),
""",
}
HOST_JOINS = {
    "hour_bucket": "host_run_hours r\n      ON r.hostname = h.hostname AND r.hour = h.hour",
    "interval": "host_runs r\n      ON r.hostname = h.hostname",
}
JOINS = tuple(LABEL_JOINS)


def exact_sum(expression: str) -> str:
    """A sum in fixed point (HUGEINT units of 1e-12): integer addition does not depend on the
    order DuckDB's threads meet the rows, so a rerun gives the same bits (a float sum does not)."""
    return f"CAST(sum(CAST(round(({expression}) * 1e12) AS HUGEINT)) AS DOUBLE) / 1e12"


def weighted_measures() -> str:
    """The SELECT list of weighted sums over ``w`` (weight) rows of minutely columns."""
    present = "CASE WHEN {} IS NOT NULL THEN w * n_samples ELSE 0 END"
    sums = {"samples": "w * n_samples"}
    for signal in MEAN_SIGNALS:
        mean = MEAN_COLUMN[signal]
        sums[f"{signal}_sum"] = f"w * {mean} * n_samples"
        sums[f"{signal}_n"] = present.format(mean)
    sums["zero_samples"] = "CASE WHEN best_signal_mean <= zero_threshold THEN w * n_samples ELSE 0 END"
    parts = [f"{exact_sum(expression)} AS {name}" for name, expression in sums.items()]
    parts += [
        "max(fb_used_mib_max) AS fb_used_mib_max",
        f"{exact_sum('w * fb_used_mib_mean * n_samples')} AS fb_used_mib_sum",
        f"{exact_sum(present.format('fb_used_mib_mean'))} AS fb_used_mib_n",
        f"{exact_sum('w * power_w_mean * n_samples * step_seconds')} AS energy_j",
        f"coalesce({exact_sum('split_w * n_samples')}, 0.0) AS split_off_samples",
    ]
    return ",\n    ".join(parts)
