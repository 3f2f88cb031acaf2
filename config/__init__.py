"""The validated cardhours configuration: ``load_config(path) -> Config``."""

from config.cluster import DEFAULT_STEP_SECONDS
from config.errors import ConfigError, Problem
from config.frames import ACCOUNTS_SCHEMA, INVENTORY_SCHEMA, NAMESPACES_SCHEMA
from config.inventory import MIG_SLICES_PER_GPU, MigProfileSpec, parse_mig_profile
from config.load import EXAMPLE_CONFIG, load_config, parse_config
from config.models import (
    AccountMapping,
    AlertsConfig,
    CloseConfig,
    ClusterConfig,
    Config,
    Department,
    Division,
    FlagsConfig,
    InventoryConfig,
    MetricsConfig,
    NamespaceMapping,
    NodeGroup,
    NoticesConfig,
    OrgConfig,
    PrometheusConfig,
    QuotasConfig,
    RatesConfig,
    ReportsConfig,
    SlurmConfig,
    SmtpConfig,
    WarehouseConfig,
)
from config.org import UNMAPPED

__all__ = [
    "ACCOUNTS_SCHEMA",
    "DEFAULT_STEP_SECONDS",
    "EXAMPLE_CONFIG",
    "INVENTORY_SCHEMA",
    "MIG_SLICES_PER_GPU",
    "NAMESPACES_SCHEMA",
    "UNMAPPED",
    "AccountMapping",
    "AlertsConfig",
    "CloseConfig",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "Department",
    "Division",
    "FlagsConfig",
    "InventoryConfig",
    "MetricsConfig",
    "MigProfileSpec",
    "NamespaceMapping",
    "NodeGroup",
    "NoticesConfig",
    "OrgConfig",
    "Problem",
    "PrometheusConfig",
    "QuotasConfig",
    "RatesConfig",
    "ReportsConfig",
    "SlurmConfig",
    "SmtpConfig",
    "WarehouseConfig",
    "load_config",
    "parse_config",
    "parse_mig_profile",
]
