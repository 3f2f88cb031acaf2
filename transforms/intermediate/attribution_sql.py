"""SQL fragments of int_gpu_minutes_attributed (the rules are in that module's docstring):
the run CTEs, the join of labelled minute rows to runs, and the sums.

Parameters are named (``$name``, ``transforms.helpers.sql_params``).
"""

from __future__ import annotations

from transforms.helpers.minute_measures import TERMS, fixed, unfixed

RUN_CTES = """runs AS (
    SELECT job_id_raw, start_time, hosts,
           greatest(start_time, $period_start) AS run_start,
           least(coalesce(end_time, $period_end), $period_end) AS run_end,
           gpus / len(hosts) AS host_gpus
    FROM staging.stg_slurm__jobs
    WHERE cluster = $cluster AND month = $month AND start_time IS NOT NULL
),
run_hours AS (
    SELECT r.*, unnest(generate_series(date_trunc('hour', run_start), run_end - INTERVAL 1 MICROSECOND,
                                       INTERVAL 1 HOUR)) AS hour
    FROM runs r WHERE run_end > run_start
),
host_run_hours AS (
    SELECT job_id_raw, start_time, run_start, run_end, host_gpus, hour, unnest(hosts) AS hostname
    FROM run_hours WHERE len(hosts) > 0
),
"""

# Labelled minute rows to runs: runs exploded per hour and equi-joined on (hpc_job, hour) + the
# overlap filter. Two runs of one job in a minute (a requeue) split it by overlap.
LABEL_CTES = """edge_minutes AS (
    SELECT DISTINCT job_id_raw, start_time, run_start, run_end, minute FROM (
        SELECT *, date_trunc('minute', run_start) AS minute FROM runs WHERE run_end > run_start
        UNION ALL
        SELECT *, date_trunc('minute', run_end - INTERVAL 1 MICROSECOND) FROM runs WHERE run_end > run_start
    )
),
split_minutes AS (
    SELECT job_id_raw, start_time, minute,
           epoch(least(minute + INTERVAL 1 MINUTE, run_end)) - epoch(greatest(minute, run_start)) AS overlap,
           sum(epoch(least(minute + INTERVAL 1 MINUTE, run_end)) - epoch(greatest(minute, run_start)))
               OVER same_minute AS total,
           count(*) OVER same_minute AS n_runs
    FROM edge_minutes
    WINDOW same_minute AS (PARTITION BY job_id_raw, minute ORDER BY start_time
                           ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    QUALIFY n_runs > 1
),
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
"""
SPLIT_OFF = "w_split"  # the sum of split_w x n_samples: samples a time-sliced GPU-minute's pods did not get


def minute_sums() -> str:
    """The SELECT list of a weighted minute rows' group: each measure's fixed-point integer sum."""
    parts = [f"CAST(sum({fixed(term)}) AS DECIMAL(38,0)) AS {name}" for name, term in TERMS.items()]
    parts += ["max(fb_used_mib_max) AS fb_used_mib_max", f"sum({fixed('split_w * n_samples')}) AS {SPLIT_OFF}"]
    return ",\n    ".join(parts)


def stored_sums(prefix: str = "") -> str:
    """The SELECT list of whole hours: each measure's stored sum (``<measure>_e12``) as the same integer."""
    parts = [f"CAST({prefix}{name}_e12 AS HUGEINT) AS {name}" for name in TERMS]
    return ",\n    ".join([*parts, f"{prefix}fb_used_mib_max AS fb_used_mib_max"])


def output_measures(measures: list[str], aggregate: bool = True) -> str:
    """The SELECT list of the output, in ``measures`` order: the integers added, as numbers.
    ``aggregate`` false: of one whole group's row as it is (no split-off samples: pods never
    go whole)."""
    parts = []
    for name in measures:
        if name == "fb_used_mib_max":
            parts.append(f"{'max(fb_used_mib_max)' if aggregate else 'fb_used_mib_max'} AS fb_used_mib_max")
        elif name == "split_off_samples":
            split = f"coalesce({unfixed(f'sum({SPLIT_OFF})')}, 0.0)" if aggregate else "CAST(0.0 AS DOUBLE)"
            parts.append(f"{split} AS split_off_samples")
        else:
            parts.append(f"{unfixed(f'sum({name})' if aggregate else name)} AS {name}")
    return ",\n    ".join(parts)
