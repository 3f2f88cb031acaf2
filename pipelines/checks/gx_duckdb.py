"""GX's SQL datasource on DuckDB: connections that share one parent, batches per day or sample.

See gx_adapter's docstring for why GX's connections are cursors of one parent connection.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import duckdb
import great_expectations.expectations as gxe
import sqlalchemy as sa
from duckdb_engine import ConnectionWrapper


def connect_parent(database_path: str) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(database_path)
    except duckdb.ConnectionException as error:
        if "different configuration" not in str(error):
            raise
        raise duckdb.ConnectionException(
            f"{error}. This process already holds {database_path} with another configuration "
            "(read_only or settings): pass that connection as run_suite_on_duckdb(..., connection=...)"
        ) from error


class _AutocommitConnection(ConnectionWrapper):
    """SQLAlchemy's BEGIN/COMMIT/ROLLBACK as no-ops: each (read-only) statement autocommits.

    duckdb-engine BEGINs a DuckDB transaction per SQLAlchemy connection and rolls it back on close,
    but GX fetches after closing (`execute_query(...).fetchall()`) and DuckDB drops an open result
    set on ROLLBACK: every metric came back empty.
    """

    def begin(self) -> None:
        return None

    def commit(self) -> None:
        return None

    def rollback(self) -> None:
        return None


def cursor_creator(parent: duckdb.DuckDBPyConnection, schema: str) -> Callable[[], ConnectionWrapper]:
    """SQLAlchemy `creator`: cursors of `parent`, so no connection with a new configuration.

    The schema goes on the session's search_path (a bound parameter) because duckdb-engine's
    reflection fails here and GX's fallback column probe drops the table's schema.
    """

    def create() -> ConnectionWrapper:
        cursor = parent.cursor()
        cursor.execute("SET search_path = ?", [schema])
        return _AutocommitConnection(cursor)

    return create


def duckdb_batch(source: Any, name: str, day_column: str, day: date | None, sample_rows: int | None) -> Any:
    if sample_rows is None:
        asset = source.add_table_asset(name=name, table_name=name)
        if day is None:
            return asset.add_batch_definition_whole_table("all").get_batch()
        daily = asset.add_batch_definition_daily("daily", column=day_column, validate_batchable=False)
        return daily.get_batch(batch_parameters={"year": day.year, "month": day.month, "day": day.day})
    # GX's fluent API exposes no row sampler, so a sample is a query asset. Its text is compiled
    # by SQLAlchemy from typed values (a checked `date`, a checked positive `int`), never
    # formatted by hand; ordering by a hash of rowid spreads the sample over the whole day.
    query = sa.select(sa.text("*")).select_from(sa.table(name))
    if day is not None:
        query = query.where(sa.column(day_column) == day)
    query = query.order_by(sa.func.hash(sa.literal_column("rowid"))).limit(sample_rows)
    sql = str(query.compile(dialect=source.get_engine().dialect, compile_kwargs={"literal_binds": True}))
    asset = source.add_query_asset(name=f"{name}_sample", query=sql)
    return asset.add_batch_definition_whole_table("all").get_batch()


def row_count(batch: Any) -> int:
    counted = batch.validate(gxe.ExpectTableRowCountToBeBetween(min_value=0))
    return int(counted.result["observed_value"])
