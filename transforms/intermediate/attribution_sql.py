"""SQL fragments of int_gpu_minutes_attributed (the rules are in that module's docstring):
the run CTEs, the join of labelled minute rows to runs, the MIG power split, and the sums.

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
# MIG power: dcgm-exporter reports a MIG GPU's power on the GPU, not per instance (the
# device row, gpu_i_id null, after ``dcgm_mig_device``). Each instance row present in a minute
# gets its share of it (``mig_weights`` by profile, else compute slices / 7; an instance seen
# in several rows of the minute, one per job label, splits its share by their samples) and
# the device row keeps the rest (1 - the present instances' shares; shares adding up to more
# than 1, a misconfigured weight, are scaled down to 1), so the
# minute's energy is the GPU's once, whoever it is attributed to. Other rows are unchanged.
MIG_POWER_CTES = """mig_weights AS (
    SELECT unnest(CAST($mig_profiles AS VARCHAR[])) AS gpu_i_profile, unnest(CAST($mig_shares AS DOUBLE[])) AS share
),
mig_instances AS (
    SELECT m.hostname, m.gpu, m.minute, m.gpu_i_id, sum(m.n_samples) AS instance_samples,
           coalesce(min(w.share), TRY_CAST(regexp_extract(min(m.gpu_i_profile), '^([1-7])g[.]', 1) AS DOUBLE) / 7.0)
               AS share
    FROM minutes_read m LEFT JOIN mig_weights w ON w.gpu_i_profile = m.gpu_i_profile
    WHERE m.gpu_i_id IS NOT NULL
    GROUP BY m.hostname, m.gpu, m.minute, m.gpu_i_id
),
mig_gpus AS (
    SELECT hostname, gpu, minute,  -- fixed point, rounded: 3/7 + 2/7 + 1/7 + 1/7 is 1 in any order
           round(CAST(sum(CAST(round(share * 1e12) AS HUGEINT)) AS DOUBLE) / 1e12, 9) AS shares
    FROM mig_instances GROUP BY hostname, gpu, minute
),
mig_devices AS (  -- the GPU's power x samples in the minute, from its rows without an instance
    SELECT g.hostname, g.gpu, g.minute, any_value(g.shares) AS shares,
           CAST(sum(CAST(round(d.power_w_mean * d.n_samples * 1e9) AS HUGEINT)) AS DOUBLE) / 1e9 AS device_energy
    FROM mig_gpus g JOIN minutes_read d
      ON d.hostname = g.hostname AND d.gpu = g.gpu AND d.minute = g.minute AND d.gpu_i_id IS NULL
    WHERE d.power_w_mean IS NOT NULL
    GROUP BY g.hostname, g.gpu, g.minute
),
mig_power AS (  -- rows without an instance keep 1 - shares of their power; instance rows get their share
    SELECT hostname, gpu, minute, -1 AS instance, greatest(0.0, 1.0 - shares) AS factor, NULL AS power
    FROM mig_devices
    UNION ALL
    SELECT i.hostname, i.gpu, i.minute, i.gpu_i_id, NULL,
           d.device_energy * i.share / greatest(1.0, d.shares) / nullif(i.instance_samples, 0)
    FROM mig_instances i JOIN mig_devices d ON d.hostname = i.hostname AND d.gpu = i.gpu AND d.minute = i.minute
),
minutes AS (
    SELECT m.* REPLACE (CASE WHEN p.instance = -1 THEN m.power_w_mean * p.factor
                             ELSE coalesce(m.power_w_mean, p.power) END AS power_w_mean)
    FROM minutes_read m LEFT JOIN mig_power p
      ON p.hostname = m.hostname AND p.gpu = m.gpu AND p.minute = m.minute AND p.instance = coalesce(m.gpu_i_id, -1)
),
"""
SPLIT_OFF = "w_split"  # the sum of split_w x n_samples: samples a time-sliced GPU-minute's pods did not get


def minute_sums() -> str:
    """The SELECT list of a weighted minute rows' group: each measure's fixed-point integer sum."""
    parts = [f"sum({fixed(term)}) AS {name}" for name, term in TERMS.items()]
    parts += ["max(fb_used_mib_max) AS fb_used_mib_max", f"sum({fixed('split_w * n_samples')}) AS {SPLIT_OFF}"]
    return ",\n    ".join(parts)


def stored_sums(prefix: str = "") -> str:
    """The SELECT list of whole hours: each measure's stored sum (``<measure>_e12``) as the same integer."""
    parts = [f"CAST({prefix}{name}_e12 AS HUGEINT) AS {name}" for name in TERMS]
    return ",\n    ".join([*parts, f"{prefix}fb_used_mib_max AS fb_used_mib_max"])


def output_measures(measures: list[str]) -> str:
    """The SELECT list of the output, in ``measures`` order: the integers added, as numbers."""
    parts = []
    for name in measures:
        if name == "fb_used_mib_max":
            parts.append("max(fb_used_mib_max) AS fb_used_mib_max")
        elif name == "split_off_samples":
            parts.append(f"coalesce({unfixed(f'sum({SPLIT_OFF})')}, 0.0) AS split_off_samples")
        else:
            parts.append(f"{unfixed(f'sum({name})')} AS {name}")
    return ",\n    ".join(parts)
