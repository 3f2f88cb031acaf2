"""The hour part of int_gpu_minutes_attributed's SQL: which (GPU instance, label, hour) groups
of minute rows go whole to one place with weight 1, taken from their hour sums
(``staging.stg_dcgm__gpu_hour_sums``), and which must be attributed minute by minute.

A group goes whole, with the method the minute rules would give each of its rows, when
(its span: from its first minute row to the end of its last, ``first_minute``/``last_minute``):

- it has an ``hpc_job`` label and no run of that job overlaps its span (``unattributed``), or
  exactly one run does and covers every minute of it (``hpc_job_label``);
- it has no label and its host has labelled rows in the hour (``unallocated``);
- it has no label, its host has none in the hour, and no run holds the host during its span
  (``unallocated``), or exactly one run holds it for every minute of it with weight 1 (all the
  host's GPUs: ``host_exclusive``).

A run's first and last hours are mostly whole too: the exporter labels a GPU's rows with a job
only while the job runs.

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
# Each group is numbered (``gid``): the routing below carries the number, not the sums.
STORED_SUMS = """hour_sums AS (
    SELECT row_number() OVER () AS gid, * EXCLUDE (day) FROM staging.stg_dcgm__gpu_hour_sums
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
    SELECT row_number() OVER () AS gid, * FROM (
{hour_sums_select("summed_minutes")}
    )
),
"""

ROUTE_CTES = f"""labelled_host_hours AS (
    SELECT DISTINCT hostname, hour FROM hour_sums WHERE hpc_job IS NOT NULL OR pod IS NOT NULL
),
mig_gpu_hours AS (
    SELECT DISTINCT hostname, gpu, hour FROM hour_sums WHERE gpu_i_id IS NOT NULL
),
groups AS (  -- what routing reads of each group, with the span of its minute rows
    SELECT gid, {", ".join(GROUP)}, step_seconds, zero_threshold, mig_weights, first_minute, last_minute,
           last_minute + INTERVAL 1 MINUTE AS span_end
    FROM hour_sums
),
label_cover AS (  -- a labelled group: the runs of its job overlapping its minutes
    SELECT s.gid, count(r.job_id_raw) AS n_runs, any_value(r.job_id_raw) AS job_id_raw,
           any_value(r.start_time) AS start_time, min(r.run_start) AS run_start, max(r.run_end) AS run_end,
           sum(r.host_gpus) AS held
    FROM groups s LEFT JOIN run_hours r
      ON r.job_id_raw = s.hpc_job AND r.hour = s.hour AND r.run_start < s.span_end AND r.run_end > s.first_minute
    WHERE s.hpc_job IS NOT NULL
    GROUP BY s.gid
),
host_cover AS (  -- an unlabelled group on a host without labels in the hour: the runs holding the host then
    SELECT s.gid, count(r.job_id_raw) AS n_runs, any_value(r.job_id_raw) AS job_id_raw,
           any_value(r.start_time) AS start_time, min(r.run_start) AS run_start, max(r.run_end) AS run_end,
           sum(r.host_gpus) AS held
    FROM groups s LEFT JOIN host_run_hours r
      ON r.hostname = s.hostname AND r.hour = s.hour AND r.run_start < s.span_end AND r.run_end > s.first_minute
    WHERE s.hpc_job IS NULL AND s.pod IS NULL
      AND NOT EXISTS (SELECT 1 FROM labelled_host_hours l WHERE l.hostname = s.hostname AND l.hour = s.hour)
    GROUP BY s.gid
),
cover AS (
    SELECT * FROM label_cover UNION ALL SELECT * FROM host_cover
),
eligible AS (  -- one run covering every minute of the group (weight 1), or none touching it
    SELECT s.gid, {", ".join(f"s.{column}" for column in GROUP)},
        CASE
            WHEN NOT $whole_hours OR s.step_seconds <> p.step_seconds OR s.zero_threshold <> p.zero_threshold
                 OR (s.hpc_job IS NULL AND s.pod IS NOT NULL) THEN NULL
            WHEN g.hostname IS NOT NULL AND s.mig_weights IS DISTINCT FROM p.mig_weights THEN NULL
            WHEN s.hpc_job IS NOT NULL THEN
                CASE WHEN v.n_runs = 0 THEN 'unattributed'
                     WHEN v.n_runs = 1 AND v.run_start < s.first_minute + INTERVAL 1 MINUTE
                          AND v.run_end > s.last_minute THEN 'hpc_job_label' END
            WHEN v.gid IS NULL OR v.n_runs = 0 THEN 'unallocated'
            WHEN v.n_runs = 1 AND v.run_start < s.first_minute + INTERVAL 1 MINUTE AND v.run_end > s.last_minute
                 AND v.held / greatest(v.held, coalesce(c.host_capacity, v.held)) = 1.0 THEN 'host_exclusive'
        END AS whole_method,
        v.job_id_raw AS whole_job_id_raw, v.start_time AS whole_start_time,
        g.hostname IS NOT NULL AS on_mig_gpu
    FROM groups s CROSS JOIN params p
    LEFT JOIN mig_gpu_hours g ON g.hostname = s.hostname AND g.gpu = s.gpu AND g.hour = s.hour
    LEFT JOIN cover v ON v.gid = s.gid
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
single_groups AS (  -- the only group of its GPU instance-hour: taken whole, its row is the output row
    SELECT min(gid) AS gid FROM hour_sums GROUP BY hostname, gpu, gpu_i_id, hour HAVING count(*) = 1
),
whole_sums AS (
    SELECT r.gid, {", ".join(f"r.{column}" for column in GROUP if column not in ("hpc_job", "pod", "namespace"))},
           CASE WHEN r.whole_method IN ('unattributed', 'unallocated') THEN NULL ELSE r.whole_job_id_raw END
               AS job_id_raw,
           CASE WHEN r.whole_method IN ('unattributed', 'unallocated') THEN NULL ELSE r.whole_start_time END
               AS start_time,
           r.whole_method AS attribution_method,
           {", ".join(f"s.{name}_e12 AS {name}" for name in TERMS)},
           s.fb_used_mib_max
    FROM routed r JOIN hour_sums s ON s.gid = r.gid WHERE r.whole_method IS NOT NULL
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
