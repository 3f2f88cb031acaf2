"""A charge month's chargeback rows, computed from the warehouse and the config.

One implementation for the chargeback assets (pipelines/assets/chargeback.py), which write what
it returns, and for ``cardhours close``, which recomputes a month with it and compares the
result with what the assets stored (warehouse/books/recompute.py). An open month gets its regular
rows; a closed month only the differences from what the ledger holds, as corrections booked
in the next open billing month (docs/chargeback.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import duckdb
import polars as pl

from config import Config
from config.rates import multiplier_frame, price_frame
from contracts.capacity_states import PLATFORM_STATES, state_column
from transforms.marts.charge_idle import capacity_by_model, int_charge_idle
from transforms.marts.charge_lines import int_charge_lines
from transforms.marts.charge_platform import platform_hours
from transforms.marts.fct_chargeback_focus import fct_chargeback_focus, focus_corrections, month_bounds
from transforms.marts.fct_chargeback_jobs import fct_chargeback_jobs, job_corrections
from transforms.marts.mart_chargeback_reconciliation import mart_chargeback_reconciliation
from warehouse import read_frame
from warehouse.books.inventory import capacity_inventory
from warehouse.books.ledger import booked, closed_months, next_open_month

USAGE_SQL = "SELECT * FROM marts.fct_job_usage WHERE month = ?"
_PLATFORM_SECONDS = [state_column(state) for state in PLATFORM_STATES]  # marts.fct_gpu_capacity_split columns
PLATFORM_SQL = (
    f"SELECT cluster, gpu_model, gpu_i_profile, hour, {', '.join(_PLATFORM_SECONDS)} "
    "FROM marts.fct_gpu_capacity_split WHERE month = ? AND list_contains(?, cluster) AND "
    f"({' OR '.join(f'{column} > 0' for column in _PLATFORM_SECONDS)})"
)


@dataclass(frozen=True)
class ChargeRows:
    """Rows of one charge month, to be written as partition (billing_month, charge_month)."""

    charge_month: date
    billing_month: date  # the charge month itself while open; else the next open month
    closed: bool  # the charge month is closed: ``rows`` are corrections
    rows: pl.DataFrame

    @property
    def partition(self) -> dict[str, date]:
        return {"billing_month": self.billing_month, "charge_month": self.charge_month}


def target(conn: duckdb.DuckDBPyConnection, month: date) -> tuple[date, bool]:
    """(billing month that books this month's rows now, whether the month is closed)."""
    closed = closed_months(conn)
    return (next_open_month(closed, month), True) if month in closed else (month, False)


def charge_lines(conn: duckdb.DuckDBPyConnection, config: Config, month: date) -> pl.DataFrame:
    """int_charge_lines of the month's fct_job_usage runs at the configured prices."""
    rates = config.rates
    start, end = month_bounds(month)
    usage = read_frame(conn, USAGE_SQL, [month])
    return int_charge_lines(
        usage,
        price_frame(rates, start, end),
        multiplier_frame(rates.partition_multipliers, "partition_name"),
        multiplier_frame(rates.qos_multipliers, "qos"),
        start,
        end,
    )


def capacity(conn: duckdb.DuckDBPyConnection, config: Config, start: datetime, end: datetime) -> pl.DataFrame:
    """Per cluster and GPU model label: GPU-hours of the inventory of each hour (observed where DCGM
    saw it) of the clusters with a scheduler (a metrics-only cluster is not charged, not even its
    idle capacity)."""
    inventory = capacity_inventory(conn, config, start, end)
    return capacity_by_model(inventory.filter(pl.col("cluster").is_in(config.charged_clusters)), start, end)


def platform(conn: duckdb.DuckDBPyConnection, config: Config, month: date) -> pl.DataFrame:
    """Per cluster, GPU model label and hour: the GPU-seconds the capacity split puts in a platform
    state (down, planned down) on the charged clusters (``charge_platform.PLATFORM_HOURS``)."""
    return platform_hours(read_frame(conn, PLATFORM_SQL, [month, list(config.charged_clusters)]))


def job_rows(conn: duckdb.DuckDBPyConnection, config: Config, month: date, lines: pl.DataFrame) -> ChargeRows:
    """marts.fct_chargeback_jobs rows of charge month ``month`` from its charge ``lines``."""
    billing, closed = target(conn, month)
    current = fct_chargeback_jobs(lines, month, config.rates.currency)
    rows = job_corrections(current, booked(conn, "chargeback_ledger_jobs", month), billing) if closed else current
    return ChargeRows(month, billing, closed, rows)


def focus_rows(conn: duckdb.DuckDBPyConnection, config: Config, month: date, lines: pl.DataFrame) -> ChargeRows:
    """marts.fct_chargeback_focus rows of charge month ``month`` (usage and idle capacity)."""
    billing, closed = target(conn, month)
    start, end = month_bounds(month)
    identity = {"currency": config.rates.currency, **config.rates.focus.model_dump()}
    names = {key: department.name for key, department in config.org.departments.items()}
    idle = int_charge_idle(
        lines,
        capacity(conn, config, start, end),
        price_frame(config.rates, start, end),
        config.rates.idle_capacity,
        start,
        end,
        platform(conn, config, month),
    )
    current = fct_chargeback_focus(lines, idle, month, identity, names)
    rows = focus_corrections(current, booked(conn, "chargeback_ledger", month), billing) if closed else current
    return ChargeRows(month, billing, closed, rows)


def reconciliation_rows(
    conn: duckdb.DuckDBPyConnection, config: Config, month: date, focus: pl.DataFrame, jobs: pl.DataFrame
) -> pl.DataFrame:
    """marts.mart_chargeback_reconciliation rows of charge month ``month`` over ``focus`` /
    ``jobs``: every FOCUS row and job line of that charge month, whatever month books them."""
    start, end = month_bounds(month)
    usage = read_frame(conn, USAGE_SQL, [month])
    return mart_chargeback_reconciliation(focus, jobs, usage, capacity(conn, config, start, end), month)
