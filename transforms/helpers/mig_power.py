"""A MIG GPU's power split over its instances' minute rows, in SQL (used by the daily hour sums
and by the month's attribution of minute rows, so both split it the same way).

dcgm-exporter reports a MIG GPU's power on the GPU, not per instance (the device row, gpu_i_id
null, after ``dcgm_mig_device``). Each instance row present in a minute gets its share of it
(``mig_weights`` by profile, else compute slices / 7; an instance seen in several rows of the
minute, one per job label, splits its share by their samples) and the device row keeps the
rest (1 - the present instances' shares; shares adding up to more than 1, a misconfigured
weight, are scaled down to 1), so the minute's energy is the GPU's once, whoever it is
attributed to. Rows of GPUs without instances in the minute are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping


def mig_power_ctes(source: str, target: str, prefix: str = "mig") -> str:
    """CTEs (comma-separated, none after the last) making ``target``: the rows of ``source`` (minute rows with
    ``hostname``, ``gpu``, ``gpu_i_id``, ``gpu_i_profile``, ``minute``, ``n_samples``,
    ``power_w_mean``) with the power split. Named parameters ``$mig_profiles`` and ``$mig_shares``
    (``transforms.helpers.sql_params``); ``prefix`` names the helper CTEs."""
    p = prefix
    return f"""{p}_weights AS (
    SELECT unnest(CAST($mig_profiles AS VARCHAR[])) AS gpu_i_profile, unnest(CAST($mig_shares AS DOUBLE[])) AS share
),
{p}_instances AS (
    SELECT m.hostname, m.gpu, m.minute, m.gpu_i_id, sum(m.n_samples) AS instance_samples,
           coalesce(min(w.share), TRY_CAST(regexp_extract(min(m.gpu_i_profile), '^([1-7])g[.]', 1) AS DOUBLE) / 7.0)
               AS share
    FROM {source} m LEFT JOIN {p}_weights w ON w.gpu_i_profile = m.gpu_i_profile
    WHERE m.gpu_i_id IS NOT NULL
    GROUP BY m.hostname, m.gpu, m.minute, m.gpu_i_id
),
{p}_gpus AS (
    SELECT hostname, gpu, minute,  -- fixed point, rounded: 3/7 + 2/7 + 1/7 + 1/7 is 1 in any order
           round(CAST(sum(CAST(round(share * 1e12) AS HUGEINT)) AS DOUBLE) / 1e12, 9) AS shares
    FROM {p}_instances GROUP BY hostname, gpu, minute
),
{p}_devices AS (  -- the GPU's power x samples in the minute, from its rows without an instance
    SELECT g.hostname, g.gpu, g.minute, any_value(g.shares) AS shares,
           CAST(sum(CAST(round(d.power_w_mean * d.n_samples * 1e9) AS HUGEINT)) AS DOUBLE) / 1e9 AS device_energy
    FROM {p}_gpus g JOIN {source} d
      ON d.hostname = g.hostname AND d.gpu = g.gpu AND d.minute = g.minute AND d.gpu_i_id IS NULL
    WHERE d.power_w_mean IS NOT NULL
    GROUP BY g.hostname, g.gpu, g.minute
),
{p}_power AS (  -- rows without an instance keep 1 - shares of their power; instance rows get their share
    SELECT hostname, gpu, minute, -1 AS instance, greatest(0.0, 1.0 - shares) AS factor, NULL AS power
    FROM {p}_devices
    UNION ALL
    SELECT i.hostname, i.gpu, i.minute, i.gpu_i_id, NULL,
           d.device_energy * i.share / greatest(1.0, d.shares) / nullif(i.instance_samples, 0)
    FROM {p}_instances i JOIN {p}_devices d ON d.hostname = i.hostname AND d.gpu = i.gpu AND d.minute = i.minute
),
{target} AS (
    SELECT m.* REPLACE (CASE WHEN p.instance = -1 THEN m.power_w_mean * p.factor
                             ELSE coalesce(m.power_w_mean, p.power) END AS power_w_mean)
    FROM {source} m LEFT JOIN {p}_power p
      ON p.hostname = m.hostname AND p.gpu = m.gpu AND p.minute = m.minute AND p.instance = coalesce(m.gpu_i_id, -1)
)"""


def mig_key(weights: Mapping[str, float]) -> str:
    """The weights as one text (profiles sorted, exact float repr): kept with the hour sums, which
    hold split power, so a month built with other weights knows to split again."""
    return ",".join(f"{profile}={float(weights[profile])!r}" for profile in sorted(weights))


def mig_values(weights: Mapping[str, float]) -> dict[str, object]:
    """The named parameters of ``mig_power_ctes``."""
    return {"mig_profiles": list(weights), "mig_shares": [float(w) for w in weights.values()]}
