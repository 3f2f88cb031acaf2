"""The config as frames for joins downstream: org mappings and the hardware inventory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from config.inventory import parse_mig_profile

if TYPE_CHECKING:
    from config.models import Config
    from config.org import AccountMapping, NamespaceMapping

_ORG_TAIL: dict[str, pl.DataType] = {
    "department": pl.String(),
    "department_name": pl.String(),
    "division": pl.String(),
    "division_name": pl.String(),
}
ACCOUNTS_SCHEMA: dict[str, pl.DataType] = {"cluster": pl.String(), "account": pl.String(), **_ORG_TAIL}
NAMESPACES_SCHEMA: dict[str, pl.DataType] = {"cluster": pl.String(), "namespace": pl.String(), **_ORG_TAIL}

# One row per GPU, or per MIG instance of a MIG-partitioned GPU.
# gpu_i_id: instances are numbered 0..n-1 per GPU in mig_layout order. The driver's real
# GPU instance ids depend on placement (nvidia-smi may print 1, 2, 9, ...); join on
# (hostname, gpu, gpu_i_profile) where they can differ.
# memory_mib: the GPU's memory; for a MIG instance the size in its profile name
# (GB x 1024, capped at the GPU's memory), an approximation of what the driver reports.
# gpu_fraction: 1.0 for a whole GPU, else RatesConfig.mig_weight(profile).
INVENTORY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "gpu_model": pl.String(),
    "model_name": pl.String(),
    "memory_mib": pl.Int64(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "gpu_fraction": pl.Float64(),
    "nvlink_domain": pl.String(),
    "switch_group": pl.String(),
}


def _mapping_frame(
    config: Config,
    mappings: Sequence[AccountMapping | NamespaceMapping],
    key: str,
    schema: dict[str, pl.DataType],
) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for cluster in config.cluster_names:
        for mapping in mappings:
            if not mapping.applies_to(cluster):
                continue
            dept = config.org.departments[mapping.department]
            rows.append(
                {
                    "cluster": cluster,
                    key: getattr(mapping, key),
                    "department": mapping.department,
                    "department_name": dept.name,
                    "division": dept.division,
                    "division_name": config.org.divisions[dept.division].name,
                }
            )
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def accounts_frame(config: Config) -> pl.DataFrame:
    """Slurm account -> department -> division, per cluster (``ACCOUNTS_SCHEMA``)."""
    return _mapping_frame(config, config.org.accounts, "account", ACCOUNTS_SCHEMA)


def namespaces_frame(config: Config) -> pl.DataFrame:
    """Kubernetes namespace -> department -> division, per cluster (``NAMESPACES_SCHEMA``)."""
    return _mapping_frame(config, config.org.namespaces, "namespace", NAMESPACES_SCHEMA)


def mig_weights(config: Config, cluster: str) -> dict[str, float]:
    """Each MIG profile of ``cluster``'s inventory and of ``rates.mig_profile_weights`` -> its share
    of a GPU (``rates.mig_weight``): how the GPU's power is split over its instances."""
    profiles = sorted(
        {
            profile
            for c in config.clusters
            if c.name == cluster
            for group in c.inventory.node_groups
            for profile in group.mig_layout
        }
    )
    return {profile: config.rates.mig_weight(profile) for profile in [*profiles, *config.rates.mig_profile_weights]}


def inventory_frame(config: Config) -> pl.DataFrame:
    """Every GPU or MIG instance of every cluster (``INVENTORY_SCHEMA``)."""
    columns: dict[str, list[Any]] = {name: [] for name in INVENTORY_SCHEMA}
    for cluster in config.clusters:
        for group in cluster.inventory.node_groups:
            instances: list[tuple[int | None, str | None, float, int]] = [
                (
                    gi_id,
                    profile,
                    config.rates.mig_weight(profile),
                    min(parse_mig_profile(profile).memory_gb * 1024, group.gpu_memory_mib),
                )
                for gi_id, profile in enumerate(group.mig_layout)
            ] or [(None, None, 1.0, group.gpu_memory_mib)]
            for host in group.hostnames():
                for gpu in range(group.gpus_per_node):
                    for gi_id, profile, fraction, memory in instances:
                        row = (
                            cluster.name,
                            host,
                            gpu,
                            group.gpu_model,
                            group.model_name,
                            memory,
                            gi_id,
                            profile,
                            fraction,
                            group.nvlink_domain,
                            group.switch_group,
                        )
                        for name, value in zip(INVENTORY_SCHEMA, row, strict=True):
                            columns[name].append(value)
    return pl.DataFrame(columns, schema=INVENTORY_SCHEMA)
