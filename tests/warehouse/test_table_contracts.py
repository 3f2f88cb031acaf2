"""Every warehouse table the migrations build against the one declaration of its columns.

A table's columns are declared once, by the SCHEMA constant of the code that writes it; the
migrations must build exactly those names and types, in that order, plus the columns listed
here (the partition column an asset adds at write, the closed ledger's own columns). Applied
migrations never change (checksums), so a copy in them (migration 0010 declares the FOCUS
columns for both the mart and the ledger) is held in step by this test, not by editing it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import duckdb
import polars as pl
import pytest

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, RAW_SAMPLE_SCHEMA
from contracts.slurm_nodes import SLURM_NODE_SCHEMA
from sources.kube.landing import RAW_KUBE_QUEUE_SCHEMA, RAW_KUBE_SERIES_SCHEMA
from sources.kube.node_runs import RAW_KUBE_NODE_RUNS_SCHEMA
from transforms.intermediate import int_gpu_inventory_observed, int_gpu_minutes_attributed
from transforms.marts import (
    fct_chargeback_focus,
    fct_chargeback_jobs,
    fct_gpu_capacity_split,
    fct_gpu_hourly,
    fct_job_flags,
    fct_job_usage,
    mart_chargeback_reconciliation,
    mart_cluster_monthly,
    mart_department_monthly,
    mart_deployment_monthly,
    mart_kube_queue_monthly,
    mart_user_monthly,
)
from transforms.staging import (
    stg_dcgm__field_presence,
    stg_dcgm__gpu_dropout,
    stg_dcgm__gpu_hour_sums,
    stg_dcgm__gpu_hourly,
    stg_dcgm__gpu_minutely,
    stg_dcgm__gpu_xid,
    stg_kube__jobs,
    stg_kube__node_capacity,
    stg_kube__node_downtime,
    stg_kube__pods,
    stg_slurm__downtime,
    stg_slurm__jobs,
    stg_slurm__node_capacity,
)
from warehouse import connect
from warehouse.deliveries import DELIVERY_SCHEMA
from warehouse.user_notices import SCHEMA as USER_NOTICES_SCHEMA

SQL_TYPES = {
    pl.String(): "VARCHAR",
    pl.Int16(): "SMALLINT",
    pl.Int32(): "INTEGER",
    pl.Int64(): "BIGINT",
    pl.Float64(): "DOUBLE",
    pl.Boolean(): "BOOLEAN",
    pl.Date(): "DATE",
    pl.Datetime("us"): "TIMESTAMP",
    pl.Binary(): "BLOB",
    pl.List(pl.String()): "VARCHAR[]",
    pl.Decimal(38, 0): "DECIMAL(38,0)",
}
DAY, MONTH = (("day", "DATE"),), (("month", "DATE"),)
# A closed ledger row: the close's time, the row's place and hash in the chain (warehouse/books/ledger_chain.py).
FROZEN = (("closed_at", "TIMESTAMP"), ("ledger_seq", "BIGINT"), ("row_hash", "VARCHAR"))
# Tables declared by their migration alone: the code writes them from the warehouse's column list.
DDL_ONLY = {"marts.chargeback_closed_months", "meta.landings", "meta.monthly_builds"}


@dataclass(frozen=True)
class Contract:
    table: str
    schema: Mapping[str, pl.DataType]
    added: tuple[tuple[str, str], ...] = ()  # (name, SQL type) beyond the SCHEMA, after its columns


CONTRACTS = (
    Contract("meta.deliveries", DELIVERY_SCHEMA),
    Contract("raw.dcgm_samples", RAW_SAMPLE_SCHEMA),
    Contract("raw.slurm_sacct", RAW_SACCT_SCHEMA),
    Contract("raw.quarantine", QUARANTINE_SCHEMA),
    Contract("raw.quarantine_monthly", QUARANTINE_SCHEMA),
    Contract("raw.kube_series", RAW_KUBE_SERIES_SCHEMA),
    Contract("raw.kube_queue_samples", RAW_KUBE_QUEUE_SCHEMA),
    Contract("raw.kube_node_runs", RAW_KUBE_NODE_RUNS_SCHEMA),
    Contract("staging.stg_kube__node_capacity", stg_kube__node_capacity.SCHEMA, DAY),
    Contract("staging.stg_kube__node_downtime", stg_kube__node_downtime.SCHEMA, DAY),
    Contract("staging.stg_dcgm__gpu_dropout", stg_dcgm__gpu_dropout.SCHEMA, DAY),
    Contract("staging.stg_dcgm__gpu_xid", stg_dcgm__gpu_xid.SCHEMA, DAY),
    Contract("staging.stg_dcgm__field_presence", stg_dcgm__field_presence.SCHEMA),
    Contract("staging.stg_dcgm__gpu_hourly", stg_dcgm__gpu_hourly.SCHEMA, DAY),
    Contract("staging.stg_dcgm__gpu_minutely", stg_dcgm__gpu_minutely.SCHEMA, DAY),
    Contract("staging.stg_dcgm__gpu_hour_sums", stg_dcgm__gpu_hour_sums.SCHEMA, DAY),
    Contract("staging.stg_slurm__jobs", stg_slurm__jobs.SCHEMA, MONTH),
    Contract("staging.stg_slurm__downtime", stg_slurm__downtime.SCHEMA, DAY),
    Contract("raw.slurm_node_snapshots", SLURM_NODE_SCHEMA, DAY),
    Contract("staging.stg_slurm__node_capacity", stg_slurm__node_capacity.SCHEMA, DAY),
    Contract("staging.stg_kube__pods", stg_kube__pods.SCHEMA, MONTH),
    Contract("staging.stg_kube__jobs", stg_kube__jobs.SCHEMA, MONTH),
    Contract("intermediate.int_gpu_inventory_observed", int_gpu_inventory_observed.SCHEMA, MONTH),
    Contract("intermediate.int_gpu_minutes_attributed", int_gpu_minutes_attributed.SCHEMA, MONTH),
    Contract("marts.fct_gpu_hourly", fct_gpu_hourly.SCHEMA),
    Contract("marts.fct_gpu_capacity_split", fct_gpu_capacity_split.SCHEMA),
    Contract("marts.fct_job_usage", fct_job_usage.SCHEMA),
    Contract("marts.fct_job_flags", fct_job_flags.SCHEMA),
    Contract("marts.mart_user_monthly", mart_user_monthly.SCHEMA),
    Contract("marts.mart_cluster_monthly", mart_cluster_monthly.SCHEMA),
    Contract("marts.mart_department_monthly", mart_department_monthly.SCHEMA),
    Contract("marts.mart_deployment_monthly", mart_deployment_monthly.SCHEMA),
    Contract("marts.mart_kube_queue_monthly", mart_kube_queue_monthly.SCHEMA),
    Contract("marts.fct_chargeback_focus", fct_chargeback_focus.SCHEMA),
    Contract("marts.chargeback_ledger", fct_chargeback_focus.SCHEMA, FROZEN),
    Contract("marts.fct_chargeback_jobs", fct_chargeback_jobs.SCHEMA),
    Contract("marts.chargeback_ledger_jobs", fct_chargeback_jobs.SCHEMA, FROZEN),
    Contract("marts.mart_chargeback_reconciliation", mart_chargeback_reconciliation.SCHEMA),
    Contract("meta.user_notices", USER_NOTICES_SCHEMA),
)


def sql_type(dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.Decimal):
        return f"DECIMAL({dtype.precision},{dtype.scale})"
    return SQL_TYPES[dtype]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = connect(tmp_path_factory.mktemp("contracts") / "cardhours.duckdb")
    yield connection
    connection.close()


def columns(conn: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    schema, name = table.split(".")
    return conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, name],
    ).fetchall()


@pytest.mark.parametrize("contract", CONTRACTS, ids=[c.table for c in CONTRACTS])
def test_the_migrations_build_the_declared_columns(warehouse: duckdb.DuckDBPyConnection, contract: Contract) -> None:
    built = columns(warehouse, contract.table)
    declared = [(name, sql_type(dtype)) for name, dtype in contract.schema.items()]
    assert dict(built) == dict(declared + list(contract.added))
    assert len(built) == len(declared) + len(contract.added)
    # Writes go by name, and ALTER TABLE ADD COLUMN appends: a column added to the SCHEMA later
    # may sit after the partition column, but the SCHEMA's own order holds.
    assert [c for c in built if c in declared] == declared


def test_every_table_has_a_declaration(warehouse: duckdb.DuckDBPyConnection) -> None:
    tables = {
        f"{s}.{t}"
        for s, t in warehouse.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema <> 'main'"
        ).fetchall()
    }
    assert tables == {c.table for c in CONTRACTS} | DDL_ONLY


def test_every_downtime_table_has_exactly_the_interval_columns(warehouse: duckdb.DuckDBPyConnection) -> None:
    from contracts.capacity_states import DOWNTIME_INTERVAL
    from pipelines.tables import DAY as DAILY
    from pipelines.tables import DOWNTIME_TABLES

    for table in DOWNTIME_TABLES:
        assert table.grain == DAILY and table.lake and table.by_cluster, table.name
        declared = [(name, sql_type(dtype)) for name, dtype in DOWNTIME_INTERVAL.items()]
        assert columns(warehouse, table.name) == [*declared, *DAY], table.name
