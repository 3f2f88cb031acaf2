"""The validated cardhours configuration (see config/examples/cardhours.example.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from config.alerts import AlertsConfig, SmtpConfig
from config.base import ConfigPath, StrictModel, raise_problems
from config.checks import cross_check
from config.close import CloseConfig
from config.cluster import ClusterConfig, MetricsConfig, PrometheusConfig, SlurmConfig
from config.delivery import DeliveryConfig
from config.inventory import InventoryConfig, NodeGroup
from config.notices import NoticesConfig
from config.org import AccountMapping, Department, Division, NamespaceMapping, OrgConfig
from config.policy import FlagsConfig, QuotasConfig, RatesConfig
from config.publish import PublishConfig
from config.schedule import ScheduleConfig
from contracts.sources import SCHEDULERS

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "AccountMapping",
    "AlertsConfig",
    "CloseConfig",
    "ClusterConfig",
    "Config",
    "DeliveryConfig",
    "Department",
    "Division",
    "FlagsConfig",
    "InventoryConfig",
    "MetricsConfig",
    "NamespaceMapping",
    "NodeGroup",
    "NoticesConfig",
    "OrgConfig",
    "PrometheusConfig",
    "PublishConfig",
    "QuotasConfig",
    "RatesConfig",
    "ReportsConfig",
    "ScheduleConfig",
    "SlurmConfig",
    "SmtpConfig",
    "WarehouseConfig",
]


class WarehouseConfig(StrictModel):
    path: ConfigPath  # DuckDB database file
    # The lake: a directory of Parquet files (the day-partitioned tables, landings, marts for BI).
    # Default: <the DuckDB file's name without its suffix>.lake beside it. May be a shared mount.
    lake: ConfigPath

    @model_validator(mode="before")
    @classmethod
    def _lake_beside_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "lake" in data:
            return data
        path = data.get("path")
        # A bad path is reported as such; the lake beside it is then never used.
        path = Path(path.strip() or "cardhours.duckdb") if isinstance(path, str) else path
        lake = path.with_name(path.stem + ".lake") if isinstance(path, Path) else "cardhours.lake"
        return {**data, "lake": str(lake)}

    @model_validator(mode="after")
    def _lake_is_a_directory(self) -> WarehouseConfig:
        if self.lake.exists() and not self.lake.is_dir():
            raise ValueError(f"lake {self.lake} is a file, not a directory: name a directory for the Parquet files")
        if self.lake == self.path:
            raise ValueError("lake must be a directory of its own, not the DuckDB file (path)")
        return self


class ReportsConfig(StrictModel):
    dir: ConfigPath  # monthly outputs land in <dir>/YYYY-MM/
    templates_dir: ConfigPath | None = None  # a site's page templates; they win over the packaged ones

    @field_validator("templates_dir")
    @classmethod
    def _templates_dir_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_dir():
            raise ValueError(
                f"no directory {value}: create it with the templates to override (docs/reports.md) "
                "or remove the key to use the packaged templates"
            )
        return value


class Config(StrictModel):
    """The whole configuration. Build it with ``load_config`` (paths resolved, errors
    formatted) or ``parse_config``; cross-section checks run after every section is valid."""

    warehouse: WarehouseConfig
    reports: ReportsConfig
    clusters: list[ClusterConfig] = Field(min_length=1)
    org: OrgConfig = Field(default_factory=OrgConfig)
    rates: RatesConfig
    flags: FlagsConfig = Field(default_factory=FlagsConfig)
    quotas: QuotasConfig = Field(default_factory=QuotasConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    close: CloseConfig = Field(default_factory=CloseConfig)
    smtp: SmtpConfig | None = None
    alerts: AlertsConfig | None = None
    delivery: DeliveryConfig | None = None
    publish: PublishConfig | None = None  # the marts copied to PostgreSQL (docs/publish.md)
    notices: NoticesConfig | None = None

    @model_validator(mode="after")
    def _cross_check(self) -> Config:
        raise_problems(cross_check(self))
        return self

    @property
    def cluster_names(self) -> list[str]:
        return [cluster.name for cluster in self.clusters]

    def clusters_with(self, source: str) -> list[ClusterConfig]:
        """The clusters that land ``source`` (``ClusterConfig.sources``), in config order."""
        return [cluster for cluster in self.clusters if source in cluster.sources]

    @property
    def charged_clusters(self) -> list[str]:
        """The clusters with a scheduler source (contracts/sources.py ``SCHEDULERS``): the ones
        the chargeback bills; a metrics-only cluster has utilization marts only."""
        return [c.name for c in self.clusters if any(source in SCHEDULERS for source in c.sources)]

    def expected_sources(self) -> dict[str, list[str]]:
        """cluster -> the sources that land a day for it (``ClusterConfig.sources``)."""
        return {cluster.name: list(cluster.sources) for cluster in self.clusters}

    def cluster(self, name: str) -> ClusterConfig:
        """The cluster with this name (``KeyError`` naming the configured ones otherwise)."""
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise KeyError(f"unknown cluster {name!r}; configured: {', '.join(self.cluster_names)}")

    def capacity_gpus(self, cluster: str) -> float:
        """GPUs the cluster can hand out, in the units jobs are charged in: a whole GPU
        counts 1.0, a MIG-partitioned GPU the summed weights of its layout (1.0 with the
        default slices/7 weights and a layout that uses all 7 slices)."""
        total = 0.0
        for group in self.cluster(cluster).inventory.node_groups:
            per_gpu = sum(self.rates.mig_weight(p) for p in group.mig_layout) if group.mig_layout else 1.0
            total += len(group.hostnames()) * group.gpus_per_node * per_gpu
        return total

    def accounts_frame(self) -> pl.DataFrame:
        """cluster, account, department, department_name, division, division_name:
        one row per configured cluster x account mapping that applies to it."""
        from config.frames import accounts_frame

        return accounts_frame(self)

    def namespaces_frame(self) -> pl.DataFrame:
        """As ``accounts_frame`` with ``namespace`` in place of ``account``."""
        from config.frames import namespaces_frame

        return namespaces_frame(self)

    def mig_weights(self, cluster: str) -> dict[str, float]:
        """A MIG profile's share of its GPU, for the profiles ``cluster`` has (``frames.mig_weights``)."""
        from config.frames import mig_weights

        return mig_weights(self, cluster)

    def inventory_frame(self) -> pl.DataFrame:
        """One row per cluster x host x GPU x MIG instance (see ``frames.INVENTORY_SCHEMA``)."""
        from config.frames import inventory_frame

        return inventory_frame(self)
