"""Monthly chargeback: priced job lines, FOCUS rows, reconciliation (blocking) and the export
files. An open month writes its regular rows; a closed month (cardhours close) writes only
Correction rows, booked in the next open billing month (docs/chargeback.md)."""

from datetime import date, datetime

import polars as pl
from dagster import AssetCheckSpec, AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from cardhours.config.rates import multiplier_frame, price_frame
from cardhours.ledger import booked, closed_months, next_open_month
from pipelines.checks.chargeback import CHECKS, reconciliation_checks
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from reports.focus_export import export_billing_month
from transforms.fct_chargeback_focus import fct_chargeback_focus, focus_corrections
from transforms.fct_chargeback_jobs import fct_chargeback_jobs, job_corrections
from transforms.int_charge_idle import capacity_by_model, int_charge_idle
from transforms.int_charge_lines import int_charge_lines
from transforms.mart_chargeback_reconciliation import mart_chargeback_reconciliation
from warehouse import read_frame, replace_partition

GROUP = "chargeback"
JOBS_KEY = ["marts", "fct_chargeback_jobs"]
FOCUS_KEY = ["marts", "fct_chargeback_focus"]
RECONCILIATION_KEY = ["marts", "mart_chargeback_reconciliation"]
EXPORT_KEY = ["reports", "chargeback_export"]
USAGE_SQL = "SELECT * FROM marts.fct_job_usage WHERE month = ?"


def _lines(conn, cardhours: CardhoursResource, start: datetime, end: datetime) -> pl.DataFrame:
    rates = cardhours.config.rates
    usage = read_frame(conn, USAGE_SQL, [start.date()])
    return int_charge_lines(
        usage, price_frame(rates, start, end), multiplier_frame(rates.partition_multipliers, "partition_name"),
        multiplier_frame(rates.qos_multipliers, "qos"), start, end,
    )


def _capacity(cardhours: CardhoursResource, start: datetime, end: datetime) -> pl.DataFrame:
    return capacity_by_model(cardhours.config.inventory_frame(), start, end)


def _target(conn, month: date) -> tuple[date, bool]:
    """(billing month that books this month's rows now, whether the month is closed)."""
    closed = closed_months(conn)
    return (next_open_month(closed, month), True) if month in closed else (month, False)


def _meta(rows: int, month: date, billing: date, closed: bool, frame: pl.DataFrame, cost: str) -> dict:
    return {
        "rows": rows, "month": str(month), "billing_month": str(billing), "month_closed": closed,
        "cost": MetadataValue.text(str(frame.get_column(cost).sum() if frame.height else 0)),
    }


@asset(key=JOBS_KEY, partitions_def=monthly_partitions, group_name=GROUP, kinds={"duckdb", "polars"},
       deps=[AssetDep(["marts", "fct_job_usage"])],
       description="Per job run and price segment: GPU-hours, unit price, cost (the per-job detail); "
       "corrections of closed months.")
def fct_chargeback_jobs_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month, currency = start.date(), cardhours.config.rates.currency
    with cardhours.warehouse() as conn:
        billing, closed = _target(conn, month)
        current = fct_chargeback_jobs(_lines(conn, cardhours, start, end), month, currency)
        rows = job_corrections(current, booked(conn, "chargeback_ledger_jobs", month), billing) if closed else current
        written = replace_partition(conn, "marts.fct_chargeback_jobs", rows,
                                    {"billing_month": billing, "charge_month": month})
    return MaterializeResult(metadata=_meta(written, month, billing, closed, rows, "cost"))


@asset(key=FOCUS_KEY, partitions_def=monthly_partitions, group_name=GROUP, kinds={"duckdb", "polars"},
       deps=[AssetDep(["marts", "fct_job_usage"]), AssetDep(JOBS_KEY)],
       description="FinOps FOCUS 1.2 rows: per cluster x department x GPU model x partition x QOS x charge "
       "period, idle capacity per rates.idle_capacity, corrections of closed months.")
def fct_chargeback_focus_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month, config = start.date(), cardhours.config
    identity = {"currency": config.rates.currency, **config.rates.focus.model_dump()}
    names = {key: department.name for key, department in config.org.departments.items()}
    with cardhours.warehouse() as conn:
        billing, closed = _target(conn, month)
        lines = _lines(conn, cardhours, start, end)
        idle = int_charge_idle(lines, _capacity(cardhours, start, end), price_frame(config.rates, start, end),
                               config.rates.idle_capacity, start, end)
        current = fct_chargeback_focus(lines, idle, month, identity, names)
        rows = focus_corrections(current, booked(conn, "chargeback_ledger", month), billing) if closed else current
        written = replace_partition(conn, "marts.fct_chargeback_focus", rows,
                                    {"billing_month": billing, "charge_month": month})
    metadata = _meta(written, month, billing, closed, rows, "BilledCost")
    metadata["idle_policy"] = config.rates.idle_capacity
    return MaterializeResult(metadata=metadata)


@asset(key=RECONCILIATION_KEY, partitions_def=monthly_partitions, group_name=GROUP, kinds={"duckdb", "polars"},
       deps=[AssetDep(FOCUS_KEY), AssetDep(JOBS_KEY), AssetDep(["marts", "fct_job_usage"])],
       check_specs=[AssetCheckSpec(name, asset=RECONCILIATION_KEY, blocking=True) for name in CHECKS],
       description="Per cluster and charge month: capacity = charged + idle, costs to the cent, departments = "
       "job detail, every job in exactly one row (over regular rows and corrections).")
def mart_chargeback_reconciliation_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        focus = read_frame(conn, "SELECT * FROM marts.fct_chargeback_focus WHERE charge_month = ?", [month])
        jobs = read_frame(conn, "SELECT * FROM marts.fct_chargeback_jobs WHERE charge_month = ?", [month])
        usage = read_frame(conn, USAGE_SQL, [month])
        rows = mart_chargeback_reconciliation(focus, jobs, usage, _capacity(cardhours, start, end), month)
        written = replace_partition(conn, "marts.mart_chargeback_reconciliation", rows, {"month": month})
    return MaterializeResult(metadata={"rows": written, "month": str(month)},
                             check_results=reconciliation_checks(rows, month, RECONCILIATION_KEY))


def _export(conn, cardhours: CardhoursResource, billing: date, closed: set[date]) -> dict[str, str]:
    paths = export_billing_month(conn, cardhours.config.reports.dir, billing, closed)
    return {f"{billing:%Y-%m} {name}": str(path) for name, path in paths.items()}


@asset(key=EXPORT_KEY, partitions_def=monthly_partitions, group_name=GROUP, kinds={"csv", "parquet"},
       deps=[AssetDep(RECONCILIATION_KEY)],
       description="<reports dir>/YYYY-MM/chargeback_focus.csv + .parquet (FOCUS 1.2) and chargeback_jobs.csv; "
       "a closed month's files come from the ledger (with its InvoiceId), and the billing month booking its "
       "corrections is rewritten.")
def chargeback_export(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        closed = set(closed_months(conn))
        paths = _export(conn, cardhours, month, closed)
        if month in closed:
            paths |= _export(conn, cardhours, next_open_month(closed, month), closed)
    return MaterializeResult(metadata={"month": str(month), "files": MetadataValue.json(paths)})


CHARGEBACK_ASSETS = [fct_chargeback_jobs_asset, fct_chargeback_focus_asset, mart_chargeback_reconciliation_asset,
                     chargeback_export]
