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
# MIG power: dcgm-exporter reports a MIG GPU's power on the GPU, not per instance (the
# device row, gpu_i_id null, after ``dcgm_mig_device``). Each instance row present in a minute
# gets its share of it (``mig_weights`` by profile, else compute slices / 7; an instance seen
# in several rows of the minute, one per job label, splits its share by their samples) and
# the device row keeps the rest (1 - the present instances' shares; shares adding up to more
# than 1, a misconfigured weight, are scaled down to 1), so the
# minute's energy is the GPU's once, whoever it is attributed to. Other rows are unchanged.
MIG_POWER_CTES = """mig_weights AS (
    SELECT unnest(CAST(? AS VARCHAR[])) AS gpu_i_profile, unnest(CAST(? AS DOUBLE[])) AS share
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
