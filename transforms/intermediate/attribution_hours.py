"""The hour part of int_gpu_minutes_attributed's SQL: which (GPU instance, label, hour) groups
of minute rows go whole to one place with weight 1, taken from their hour sums
(``staging.stg_dcgm__gpu_hour_sums``), and which must be attributed minute by minute.

A group goes whole, with the method the minute rules would give each of its rows, when:

- it has an ``hpc_job`` label and no run of that job touches the hour (``unattributed``), or
  exactly one run does and covers the whole hour (``hpc_job_label``);
- it has no label and its host has labelled rows in the hour (``unallocated``);
- it has no label, its host has none in the hour, and no run holds the host in the hour
  (``unallocated``), or exactly one run holds it for the whole hour with weight 1 (all the
  host's GPUs: ``host_exclusive``).

Always minute by minute: pod labels (a time-sliced GPU-minute is split by its rows), and sums
made with another ``step_seconds`` or ``zero_threshold``. A GPU with MIG instances goes whole
or minute by minute for a whole hour at once, all its rows together: its power is split per
minute between the instances present (``transforms.helpers.mig_power``), which the minute
rows can only do all together; and so only when every group of the GPU-hour could go whole
and the sums were split with the same ``mig_weights``. ``$whole_hours`` false sends every
group minute by minute (the reference the tests compare with).
"""

from __future__ import annotations

from transforms.helpers.mig_power import mig_power_ctes
from transforms.helpers.minute_measures import TERMS
from transforms.staging.stg_dcgm__gpu_hour_sums import KEY, hour_sums_select

GROUP = tuple(column for column in KEY if column != "cluster")

# The period's hour sums: stored by the daily job, or summed here from the minute rows.
STORED_SUMS = """hour_sums AS (
    SELECT * EXCLUDE (day) FROM staging.stg_dcgm__gpu_hour_sums
    WHERE cluster = $cluster AND day >= $first_day AND day <= $last_day
      AND hour >= $period_start AND hour < $period_end
),
"""
SUMMED_SUMS = f"""summed_raw AS (
    SELECT *, CAST(1.0 AS DOUBLE) AS w, date_trunc('hour', minute) AS hour FROM staging.stg_dcgm__gpu_minutely
    WHERE cluster = $cluster AND day >= $first_day AND day <= $last_day
      AND minute >= $period_start AND minute < $period_end
),
{mig_power_ctes("summed_raw", "summed_minutes", "summed_mig")},
hour_sums AS (
{hour_sums_select("summed_minutes")}
),
"""

ROUTE_CTES = f"""labelled_host_hours AS (
    SELECT DISTINCT hostname, hour FROM hour_sums WHERE hpc_job IS NOT NULL OR pod IS NOT NULL
),
mig_gpu_hours AS (
    SELECT DISTINCT hostname, gpu, hour FROM hour_sums WHERE gpu_i_id IS NOT NULL
),
label_hours AS (
    SELECT job_id_raw, hour, count(*) AS n_runs, any_value(start_time) AS start_time,
           min(run_start) AS run_start, max(run_end) AS run_end
    FROM run_hours GROUP BY job_id_raw, hour
),
host_hours AS (
    SELECT hostname, hour, count(*) AS n_runs, any_value(job_id_raw) AS job_id_raw,
           any_value(start_time) AS start_time, min(run_start) AS run_start, max(run_end) AS run_end,
           sum(host_gpus) AS held
    FROM host_run_hours GROUP BY hostname, hour
),
eligible AS (
    SELECT s.*,
        CASE
            WHEN NOT $whole_hours OR s.step_seconds <> p.step_seconds OR s.zero_threshold <> p.zero_threshold
                 OR (s.hpc_job IS NULL AND s.pod IS NOT NULL) THEN NULL
            WHEN g.hostname IS NOT NULL AND s.mig_weights IS DISTINCT FROM p.mig_weights THEN NULL
            WHEN s.hpc_job IS NOT NULL THEN
                CASE WHEN l.n_runs IS NULL THEN 'unattributed'
                     WHEN l.n_runs = 1 AND l.run_start <= s.hour AND l.run_end >= s.hour + INTERVAL 1 HOUR
                     THEN 'hpc_job_label' END
            WHEN lh.hostname IS NOT NULL OR h.n_runs IS NULL THEN 'unallocated'
            WHEN h.n_runs = 1 AND h.run_start <= s.hour AND h.run_end >= s.hour + INTERVAL 1 HOUR
                 AND h.held / greatest(h.held, coalesce(c.host_capacity, h.held)) = 1.0 THEN 'host_exclusive'
        END AS whole_method,
        CASE WHEN s.hpc_job IS NOT NULL THEN l.job_id_raw ELSE h.job_id_raw END AS whole_job_id_raw,
        CASE WHEN s.hpc_job IS NOT NULL THEN l.start_time ELSE h.start_time END AS whole_start_time,
        g.hostname IS NOT NULL AS on_mig_gpu
    FROM hour_sums s CROSS JOIN params p
    LEFT JOIN mig_gpu_hours g ON g.hostname = s.hostname AND g.gpu = s.gpu AND g.hour = s.hour
    LEFT JOIN label_hours l ON l.job_id_raw = s.hpc_job AND l.hour = s.hour
    LEFT JOIN labelled_host_hours lh ON lh.hostname = s.hostname AND lh.hour = s.hour
    LEFT JOIN host_hours h ON h.hostname = s.hostname AND h.hour = s.hour
    LEFT JOIN capacity c ON c.hostname = s.hostname
),
split_mig_gpu_hours AS (  -- MIG GPU-hours with a group that cannot go whole: all their groups cannot
    SELECT DISTINCT hostname, gpu, hour FROM eligible WHERE on_mig_gpu AND whole_method IS NULL
),
routed AS (
    SELECT e.* REPLACE (CASE WHEN x.hostname IS NULL THEN e.whole_method END AS whole_method)
    FROM eligible e LEFT JOIN split_mig_gpu_hours x ON x.hostname = e.hostname AND x.gpu = e.gpu AND x.hour = e.hour
),
partial_groups AS (
    SELECT {", ".join(GROUP)} FROM routed WHERE whole_method IS NULL
),
whole_sums AS (
    SELECT {", ".join(column for column in GROUP if column not in ("hpc_job", "pod", "namespace"))},
           CASE WHEN whole_method IN ('unattributed', 'unallocated') THEN NULL ELSE whole_job_id_raw END
               AS job_id_raw,
           CASE WHEN whole_method IN ('unattributed', 'unallocated') THEN NULL ELSE whole_start_time END
               AS start_time,
           whole_method AS attribution_method,
           {", ".join(f"CAST({name}_e12 AS HUGEINT) AS {name}" for name in TERMS)},
           fb_used_mib_max
    FROM routed WHERE whole_method IS NOT NULL
),
"""


def partial_minutes(columns: list[str]) -> str:
    """The ``minutes_read`` CTE: ``columns`` of the period's minute rows in groups not taken whole."""
    on = " AND ".join(
        "k.hour = date_trunc('hour', m.minute)" if column == "hour" else f"k.{column} IS NOT DISTINCT FROM m.{column}"
        for column in GROUP
    )
    return f"""minutes_read AS (
    SELECT {", ".join(f"m.{column}" for column in columns)}, date_trunc('hour', m.minute) AS hour
    FROM staging.stg_dcgm__gpu_minutely m SEMI JOIN partial_groups k ON {on}
    WHERE m.cluster = $cluster AND m.day >= $first_day AND m.day <= $last_day
      AND m.minute >= $period_start AND m.minute < $period_end
),
"""
