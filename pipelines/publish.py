"""Which marts ``[publish]`` copies to PostgreSQL, and a month's publication (docs/publish.md).

The public marts are the tables pipelines/tables.py declares ``parquet`` (the ones also written
to the lake for BI tools); ``[publish] marts`` chooses among them by table name. Each is
published by its period column (``month``, or ``charge_month`` for the chargeback detail),
its PostgreSQL shape derived from the DuckDB table (warehouse/publish/ddl.py). Used by
``cardhours publish`` and the Dagster asset ``publish/postgres``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import duckdb
import psycopg2

from config.base import unknown
from config.publish import PublishConfig
from pipelines.tables import TABLES, Table
from warehouse.landings import FINISHED, latest_build
from warehouse.publish.ddl import PgTable, duckdb_columns, pg_table
from warehouse.publish.month import Published, publish_month
from warehouse.publish.postgres import PublishError, connect, target

PUBLIC_MARTS: tuple[Table, ...] = tuple(table for table in TABLES if table.parquet)

__all__ = ["PUBLIC_MARTS", "Published", "PublishError", "publish", "selected_marts"]


def mart_name(table: Table) -> str:
    """The name a mart has in ``[publish] marts`` and in PostgreSQL: ``fct_job_usage``."""
    return table.name.split(".", 1)[1]


def selected_marts(settings: PublishConfig) -> list[Table]:
    """The marts ``[publish] marts`` names (every public mart without the key), in declaration
    order; PublishError naming the key and the unknown names otherwise."""
    by_name = {mart_name(table): table for table in PUBLIC_MARTS}
    if settings.marts is None:
        return list(PUBLIC_MARTS)
    problems = [unknown("mart", name, by_name) for name in settings.marts if name not in by_name]
    if problems:
        raise PublishError(f"[publish] marts: {'; '.join(problems)}")
    return [table for table in PUBLIC_MARTS if mart_name(table) in settings.marts]


def pg_tables(duck: duckdb.DuckDBPyConnection, settings: PublishConfig) -> list[PgTable]:
    """The selected marts' PostgreSQL shapes, from their DuckDB tables."""
    return [
        pg_table(table.name, table.period, duckdb_columns(duck, table.name), settings.target_schema)
        for table in selected_marts(settings)
    ]


def require_built(duck: duckdb.DuckDBPyConnection, month: date) -> None:
    """PublishError unless the month's latest build finished."""
    build = latest_build(duck, month)
    if build is None:
        raise PublishError(f"{month:%Y-%m} has not been built: run cardhours run --month {month:%Y-%m} first")
    if build.status != FINISHED:
        raise PublishError(
            f"the build of {month:%Y-%m} started at {build.started_at} has not finished (meta.monthly_builds "
            f"status {build.status}): run cardhours run --month {month:%Y-%m} again, then publish"
        )


def publish(
    duck: duckdb.DuckDBPyConnection,
    settings: PublishConfig,
    month: date,
    now: datetime,
    progress: Callable[[str], None] | None = None,
) -> list[Published]:
    """Replace ``month`` of the selected marts in PostgreSQL, all in one transaction; only a
    month whose build finished (meta.monthly_builds), so an unbuilt month never empties one."""
    require_built(duck, month)
    tables = pg_tables(duck, settings)
    pg = connect(settings)
    try:
        return publish_month(pg, duck, tables, month, now, progress)
    except psycopg2.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PublishError(
            f"{target(settings)} refused the publication of {month:%Y-%m}; nothing changed (rolled back): {first}. "
            f"Check that user {settings.user} may create tables in that schema (or create them beforehand)"
        ) from exc
    finally:
        pg.close()
