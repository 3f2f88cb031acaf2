"""The sources a cluster lands a day from, and the causes of a day a source answered with nothing.

A cluster has the sources its config sections name (``config.cluster.ClusterConfig.sources``):
``dcgm`` always (``[clusters.metrics]``), ``sacct`` with ``[clusters.slurm]``, ``kube`` with
``[clusters.kubernetes]``, ``slurm_downtime`` with a ``[clusters.slurm]`` that names where node
events and reservations come from (``sacctmgr_command``, ``events_file``,
``reservations_file``), ``slurm_nodes`` with one that names where node records come from
(``scontrol_command``, ``nodes_file``). The names are also the ``source`` of ``meta.landings`` and of a
daily landing's ``raw.quarantine`` rows.

Each source's day ends one of three ways (docs/marts.md, "Landings and coverage gaps"):

- **data**: the day lands ``ok``;
- **empty**: the source answered, with nothing for the day (no series, no job): the day lands
  as a coverage gap (``gap``) with one of ``GAP_CAUSES``. It does not fail the day and does not
  stop the month;
- **broken**: the source did not answer or its answer could not be read (unreachable, refused,
  malformed): the day fails (``failed``), and the error names the cluster and the source.
"""

from __future__ import annotations

DCGM, SACCT, KUBE, SLURM_DOWNTIME = "dcgm", "sacct", "kube", "slurm_downtime"
SLURM_NODES = "slurm_nodes"

SOURCE_TITLES: dict[str, str] = {
    DCGM: "GPU samples ([clusters.metrics])",
    SACCT: "Slurm accounting ([clusters.slurm])",
    KUBE: "Kubernetes pod series ([clusters.kubernetes])",
    SLURM_DOWNTIME: "Slurm node events and reservations ([clusters.slurm] sacctmgr_command / events_file)",
    SLURM_NODES: "Slurm node records ([clusters.slurm] scontrol_command / nodes_file)",
}
SOURCES: tuple[str, ...] = tuple(SOURCE_TITLES)  # in landing order
# Sources that say who ran what. A cluster with none of them (metrics only) has utilization
# marts but no chargeback: no job lines, and no idle capacity rows (docs/chargeback.md).
SCHEDULERS: tuple[str, ...] = (SACCT, KUBE)

# Who saw a card of the observed inventory (int_gpu_inventory_observed ``source``, the review's
# "observed by"), in the order they are trusted: DCGM's series, then a Kubernetes node's
# advertised capacity, then a Slurm node's GRES (scontrol).
OBSERVED_BY_DCGM, OBSERVED_BY_KUBE, OBSERVED_BY_SLURM = DCGM, KUBE, "slurm"

NO_SERIES, NO_JOBS, BEFORE_FIRST_SAMPLE = "no_series", "no_jobs", "before_first_sample"

# cause -> what it means, as the review, the CLI summary and close print it (docs/marts.md says more)
GAP_CAUSES: dict[str, str] = {
    BEFORE_FIRST_SAMPLE: "no series, before the first ever landed",
    NO_SERIES: "no series",
    NO_JOBS: "no jobs",
}
