"""The Kubernetes part of int_gpu_minutes_attributed's SQL: minute rows tied to pods.

CTE text spliced into ``transforms.intermediate.int_gpu_minutes_attributed`` (rules in its
docstring and docs/marts.md). ``POD_RUN_CTES`` reads ``staging.stg_kube__pods`` (named
parameters ``$period_start``, ``$period_end``, ``$cluster``, ``$month``:
``transforms.helpers.sql_params``) into ``pod_run_hours`` (pods exploded per hour, keyed by
their job); ``POD_LABEL_CTES`` ties the ``minutes`` rows with a ``pod`` label and no
``hpc_job`` to them by (namespace, pod, hour) + the overlap filter, the same join shape as the
``hpc_job`` label, and splits a time-sliced GPU-minute between its pods (``w``, ``split_w``).
A pod name reused within one minute (a StatefulSet pod recreated) matches both pods there:
the row is split evenly between them (``pod_name_reuse``, from the pods' edge minutes).
"""

# stg_kube__jobs' job key (transforms/staging/stg_kube__jobs.py job_key) in SQL: replica and bare pods
# are their own job, other owners group their pods.
POD_JOB_KEY = """CASE WHEN owner_kind IS NULL OR owner_kind IN ('<none>', 'ReplicaSet', 'StatefulSet', 'DaemonSet',
    'ReplicationController') THEN namespace || '/' || pod
    ELSE namespace || '/' || owner_kind || '/' || owner_name END"""

POD_RUN_CTES = f"""pod_runs AS (
    SELECT job_id_raw, namespace, pod, run_start, run_end, min(pod_start) OVER (PARTITION BY job_id_raw) AS start_time
    FROM (SELECT {POD_JOB_KEY} AS job_id_raw, namespace, pod, start_time AS pod_start,
                 greatest(start_time, $period_start) AS run_start,
                 least(coalesce(end_time, $period_end), $period_end) AS run_end
          FROM staging.stg_kube__pods WHERE cluster = $cluster AND month = $month AND start_time IS NOT NULL)
),
pod_run_hours AS (
    SELECT r.*, unnest(generate_series(date_trunc('hour', run_start), run_end - INTERVAL 1 MICROSECOND,
                                       INTERVAL 1 HOUR)) AS hour
    FROM pod_runs r WHERE run_end > run_start
),
pod_name_reuse AS (
    SELECT namespace, pod, minute, count(*) AS n_pods FROM (
        SELECT DISTINCT namespace, pod, run_start, minute FROM (
            SELECT namespace, pod, run_start, date_trunc('minute', run_start) AS minute
            FROM pod_runs WHERE run_end > run_start
            UNION ALL
            SELECT namespace, pod, run_start, date_trunc('minute', run_end - INTERVAL 1 MICROSECOND) FROM pod_runs
            WHERE run_end > run_start))
    GROUP BY ALL HAVING count(*) > 1
),
"""

# A GPU-minute with several pods' rows: their samples and the largest row (grouped, not a
# window: a hash aggregate over the pod rows is cheaper than sorting them).
POD_LABEL_CTES = """shared_gpu_minutes AS (
    SELECT hostname, gpu, coalesce(gpu_i_id, -1) AS instance, minute, sum(n_samples) AS held, max(n_samples) AS largest
    FROM minutes WHERE hpc_job IS NULL AND pod IS NOT NULL GROUP BY ALL HAVING count(*) > 1
),
pod_minutes AS (
    SELECT m.*, CASE WHEN g.held IS NULL THEN 1.0
                     ELSE greatest(g.largest, least(g.held, greatest(1, floor(60 / step_seconds)))) / g.held
                END AS share
    FROM minutes m CROSS JOIN params LEFT JOIN shared_gpu_minutes g
      ON g.hostname = m.hostname AND g.gpu = m.gpu AND g.instance = coalesce(m.gpu_i_id, -1) AND g.minute = m.minute
    WHERE m.hpc_job IS NULL AND m.pod IS NOT NULL
),
pod_labelled AS (
    SELECT p.* EXCLUDE (share), r.job_id_raw, r.start_time,
           CASE WHEN r.job_id_raw IS NULL THEN 'unattributed' WHEN p.share < 1.0 - 1e-12 THEN 'pod_shared'
                ELSE 'pod_label' END AS attribution_method,
           p.share / coalesce(u.n_pods, 1) AS w, (1.0 - p.share) / coalesce(u.n_pods, 1) AS split_w
    FROM pod_minutes p LEFT JOIN pod_run_hours r
      ON r.namespace = p.namespace AND r.pod = p.pod AND r.hour = p.hour
     AND p.minute < r.run_end AND p.minute + INTERVAL 1 MINUTE > r.run_start
    LEFT JOIN pod_name_reuse u ON u.namespace = p.namespace AND u.pod = p.pod AND u.minute = p.minute
),
"""
