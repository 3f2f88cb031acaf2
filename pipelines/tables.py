"""Every table the pipelines write, and every asset, declared once: name, period, group.

A ``Table`` is a warehouse table and the asset that writes it: the asset's key is the table's
``schema.name`` split in two (``raw/dcgm_samples``), its partitions follow the table's grain
(one UTC day or month), and a partition of the table is the rows of that period (and cluster,
for the raw tables landed one cluster at a time). An asset reads tables by naming them here
(``reads=`` in pipelines/step.py), and Dagster's lineage is derived from those reads: each
read table's writer is a dependency. A ``Node`` is an asset that writes files or bookkeeping
rather than a table of its own name. Where a table is stored is decided in pipelines/store.py
from one flag per table: ``lake`` (Parquet files, one per partition: the daily tables) or the
DuckDB file (the monthly ones; ``parquet`` also copies each partition to the lake for BI tools).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from dagster import AssetKey, PartitionsDefinition

from contracts.sources import DCGM, KUBE
from pipelines.partitions import daily_partitions, monthly_partitions
from warehouse.lake import LakeTable

DAY, MONTH = "day", "month"


@dataclass(frozen=True)
class Node:
    """An asset of the graph that writes files or bookkeeping rows, not a table of its name."""

    name: str  # "schema.name": the asset key's two parts
    grain: str  # DAY or MONTH: its partitions
    group: str

    @property
    def key(self) -> AssetKey:
        return AssetKey(self.name.split("."))

    @property
    def partitions_def(self) -> PartitionsDefinition:
        return daily_partitions if self.grain == DAY else monthly_partitions


@dataclass(frozen=True)
class Table(Node):
    """A warehouse table and the asset that writes it (group None: no asset of its own, it is
    written beside ``writer``'s table, or beside several assets' tables when writer is None)."""

    group: str | None = None
    by_cluster: bool = False  # a partition per cluster and period (the raw tables)
    period_column: str = ""  # the column of the period; default: the grain ("day", "month")
    writer: Table | None = None
    lake: bool = False  # stored in the lake (Parquet per partition), not in the DuckDB file
    lake_keys: tuple[str, ...] = ()  # its partition columns in path order; default: cluster (if by_cluster), period
    union: str = ""  # a DuckDB table the lake view adds its rows to (raw.quarantine: the monthly rejects)
    parquet: bool = False  # a DuckDB table whose partitions are also written to the lake as Parquet (BI tools)

    @property
    def period(self) -> str:
        return self.period_column or self.grain

    @property
    def lake_table(self) -> LakeTable:
        """Where its partitions are in the lake (a ``lake`` table's, or a ``parquet`` copy's)."""
        keys = self.lake_keys or ((("cluster",) if self.by_cluster else ()) + (self.period,))
        return LakeTable(self.name, keys, self.union)

    @property
    def asset(self) -> Table | None:
        """The asset that writes this table: its own, or ``writer``."""
        return self if self.group is not None else self.writer


def _raw(name: str) -> Table:
    return Table(name, DAY, "ingest", by_cluster=True, lake=True)


def _daily(name: str) -> Table:
    return Table(name, DAY, "staging", by_cluster=True, lake=True)


def _mart(name: str, group: str = "marts", **kwargs) -> Table:
    return Table(name, MONTH, group, parquet=True, **kwargs)


RAW_DCGM_SAMPLES = _raw("raw.dcgm_samples")
RAW_SLURM_SACCT = _raw("raw.slurm_sacct")
RAW_KUBE_SERIES = _raw("raw.kube_series")
RAW_KUBE_QUEUE_SAMPLES = Table("raw.kube_queue_samples", DAY, by_cluster=True, writer=RAW_KUBE_SERIES, lake=True)
RAW_KUBE_NODE_RUNS = Table("raw.kube_node_runs", DAY, by_cluster=True, writer=RAW_KUBE_SERIES, lake=True)
RAW_SLURM_NODE_SNAPSHOTS = _raw("raw.slurm_node_snapshots")  # scontrol node records, read when a day lands
# Rejected input: of the daily landings per source, cluster and day (partition_key) in the lake, and
# of the monthly staging steps per source and month in the DuckDB file; raw.quarantine reads both.
RAW_QUARANTINE_MONTHLY = Table("raw.quarantine_monthly", MONTH, period_column="partition_key")
RAW_QUARANTINE = Table(
    "raw.quarantine",
    DAY,
    period_column="partition_key",
    lake=True,
    lake_keys=("source", "cluster", "partition_key"),
    union=RAW_QUARANTINE_MONTHLY.name,
)

STG_DCGM__GPU_HOURLY = _daily("staging.stg_dcgm__gpu_hourly")
STG_DCGM__GPU_MINUTELY = _daily("staging.stg_dcgm__gpu_minutely")
STG_DCGM__GPU_HOUR_SUMS = _daily("staging.stg_dcgm__gpu_hour_sums")
STG_DCGM__FIELD_PRESENCE = _daily("staging.stg_dcgm__field_presence")
STG_KUBE__NODE_CAPACITY = _daily("staging.stg_kube__node_capacity")
STG_SLURM__NODE_CAPACITY = _daily("staging.stg_slurm__node_capacity")
# Downtime intervals (contracts/capacity_states.py DOWNTIME_INTERVAL) of the day, one table per source.
STG_DCGM__GPU_DROPOUT = _daily("staging.stg_dcgm__gpu_dropout")
STG_DCGM__GPU_XID = _daily("staging.stg_dcgm__gpu_xid")
STG_KUBE__NODE_DOWNTIME = _daily("staging.stg_kube__node_downtime")
STG_SLURM__DOWNTIME = Table("staging.stg_slurm__downtime", DAY, "ingest", by_cluster=True, lake=True)
STG_SLURM__JOBS = Table("staging.stg_slurm__jobs", MONTH, "staging")
STG_KUBE__PODS = Table("staging.stg_kube__pods", MONTH, "staging")
STG_KUBE__JOBS = Table("staging.stg_kube__jobs", MONTH, "staging")

INT_GPU_MINUTES_ATTRIBUTED = Table("intermediate.int_gpu_minutes_attributed", MONTH, "intermediate")
INT_GPU_INVENTORY_OBSERVED = Table("intermediate.int_gpu_inventory_observed", MONTH, "intermediate")

FCT_JOB_USAGE = _mart("marts.fct_job_usage")
FCT_GPU_HOURLY = _mart("marts.fct_gpu_hourly")
FCT_GPU_CAPACITY_SPLIT = _mart("marts.fct_gpu_capacity_split")  # each GPU-hour in capacity states
MART_DEPARTMENT_MONTHLY = _mart("marts.mart_department_monthly")
MART_CLUSTER_MONTHLY = _mart("marts.mart_cluster_monthly")
MART_DEPLOYMENT_MONTHLY = _mart("marts.mart_deployment_monthly")
MART_KUBE_QUEUE_MONTHLY = _mart("marts.mart_kube_queue_monthly")
FCT_JOB_FLAGS = _mart("marts.fct_job_flags")
MART_USER_MONTHLY = _mart("marts.mart_user_monthly")
# Chargeback rows of a charge month (booked in a billing month: warehouse/books/chargeback_rows.py).
FCT_CHARGEBACK_JOBS = _mart("marts.fct_chargeback_jobs", "chargeback", period_column="charge_month")
FCT_CHARGEBACK_FOCUS = _mart("marts.fct_chargeback_focus", "chargeback", period_column="charge_month")
# The billing months `cardhours close` froze (warehouse/books/ledger.py): no asset writes it.
CHARGEBACK_CLOSED_MONTHS = Table("marts.chargeback_closed_months", MONTH, period_column="billing_month")
# The month's mail, one row per audience and recipient (warehouse/deliveries.py): written by the
# delivery step and `cardhours deliver`, read by both so a rerun sends only what is missing.
DELIVERIES = Table("meta.deliveries", MONTH)
MART_CHARGEBACK_RECONCILIATION = _mart("marts.mart_chargeback_reconciliation", "chargeback")

# Every table of downtime intervals: daily tables (period column `day`) whose columns are exactly
# contracts/capacity_states.py DOWNTIME_INTERVAL (+ day). The capacity split (marts.fct_gpu_capacity_split)
# and the review's downtime section read their union; a new source of intervals adds its table here.
DOWNTIME_TABLES: tuple[Table, ...] = (
    STG_SLURM__DOWNTIME,
    STG_KUBE__NODE_DOWNTIME,
    STG_DCGM__GPU_DROPOUT,
    STG_DCGM__GPU_XID,
)


# The downtime tables derived from a landed source after its landing (the daily job writes each
# day's partition, empty or not, once the source landed): the month's capacity split refuses a
# landed day whose partition is missing or older than the landing, rather than read it as "no
# downtime". stg_slurm__downtime is written with its own landing, so the month's gate covers it.
# Days landed before the table's migration (a warehouse upgraded from an older cardhours) were
# never derived: they are let through with a warning that says so.
class DerivedDowntime(NamedTuple):
    source: str  # the landed source it is derived from, day by day (contracts/sources.py)
    since_migration: int  # the migration that created the table: days landed before it were never derived


DERIVED_DOWNTIME: dict[Table, DerivedDowntime] = {
    STG_KUBE__NODE_DOWNTIME: DerivedDowntime(KUBE, 26),
    STG_DCGM__GPU_DROPOUT: DerivedDowntime(DCGM, 27),
    STG_DCGM__GPU_XID: DerivedDowntime(DCGM, 32),
}

MONTH_LANDED = Node("meta.month_landed", MONTH, "meta")  # the monthly gate: every day landed
REVIEW_HTML = Node("reports.review_html", MONTH, "reports")
CHARGEBACK_EXPORT = Node("reports.chargeback_export", MONTH, "chargeback")
REVIEW_DELIVERY = Node("reports.review_delivery", MONTH, "reports")  # the month's mail, when [delivery] is set
ARCHIVE_INDEX = Node("reports.archive_index", MONTH, "reports")  # <reports dir>/index.html, after a month's files
PUBLISH_POSTGRES = Node("publish.postgres", MONTH, "publish")  # the public marts copied to [publish]'s PostgreSQL
USER_NOTICES = Node("reports.user_notices", MONTH, "reports")  # [notices] mail to users; rows in meta.user_notices

NODES: tuple[Node, ...] = tuple(value for value in list(globals().values()) if isinstance(value, Node))
TABLES: tuple[Table, ...] = tuple(node for node in NODES if isinstance(node, Table))


def lake_tables() -> list[LakeTable]:
    """Every table stored in the lake, the raw ones first (written before their rollups)."""
    return [table.lake_table for table in TABLES if table.lake]


def asset_keys(grain: str) -> list[AssetKey]:
    """The keys of every asset partitioned by ``grain`` (DAY or MONTH)."""
    return [node.key for node in NODES if node.grain == grain and (not isinstance(node, Table) or node.group)]
