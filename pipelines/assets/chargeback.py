"""Monthly chargeback: priced job lines, FOCUS rows, reconciliation (blocking) and the export
files. An open month writes its regular rows; a closed month (cardhours close) writes only
Correction rows, booked in the next open billing month (docs/chargeback.md)."""

from datetime import date

from dagster import MaterializeResult, MetadataValue

from pipelines.checks.chargeback import CHECKS, reconciliation_checks
from pipelines.landing import utc_now
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    CHARGEBACK_CLOSED_MONTHS,
    CHARGEBACK_EXPORT,
    FCT_CHARGEBACK_FOCUS,
    FCT_CHARGEBACK_JOBS,
    FCT_GPU_CAPACITY_SPLIT,
    FCT_JOB_USAGE,
    INT_GPU_INVENTORY_OBSERVED,
    MART_CHARGEBACK_RECONCILIATION,
)
from reports.focus_export import export_billing_month
from reports.manifest import MANIFEST
from warehouse.books.chargeback_rows import ChargeRows, charge_lines, focus_rows, job_rows, reconciliation_rows
from warehouse.books.ledger import closed_months, next_open_month
from warehouse.landings import finish_build


def _built(charge: ChargeRows, cost: str, **more) -> Built:
    """A charge month's rows, written as its (billing month, charge month) partition."""
    frame = charge.rows
    metadata = {
        "billing_month": str(charge.billing_month),
        "month_closed": charge.closed,
        "cost": MetadataValue.text(str(frame.get_column(cost).sum() if frame.height else 0)),
        **more,
    }
    return Built(frame, metadata=metadata, partition=charge.partition)


@table_asset(
    FCT_CHARGEBACK_JOBS,
    reads=[FCT_JOB_USAGE, CHARGEBACK_CLOSED_MONTHS],
    kinds=["polars"],
    description="Per job run and price segment: GPU-hours, unit price, cost (the per-job detail); "
    "corrections of closed months.",
)
def fct_chargeback_jobs_asset(step: Step) -> Built:
    conn = step.store.conn
    return _built(job_rows(conn, step.config, step.month, charge_lines(conn, step.config, step.month)), "cost")


@table_asset(
    FCT_CHARGEBACK_FOCUS,
    reads=[
        FCT_JOB_USAGE,
        FCT_CHARGEBACK_JOBS,
        CHARGEBACK_CLOSED_MONTHS,
        INT_GPU_INVENTORY_OBSERVED,
        FCT_GPU_CAPACITY_SPLIT,
    ],
    kinds=["polars"],
    description="FinOps FOCUS 1.2 rows: per cluster x department x GPU model x partition x QOS x charge "
    "period, idle capacity per rates.idle_capacity, corrections of closed months.",
)
def fct_chargeback_focus_asset(step: Step) -> Built:
    conn = step.store.conn
    charge = focus_rows(conn, step.config, step.month, charge_lines(conn, step.config, step.month))
    return _built(charge, "BilledCost", idle_policy=step.config.rates.idle_capacity)


@table_asset(
    MART_CHARGEBACK_RECONCILIATION,
    reads=[FCT_CHARGEBACK_FOCUS, FCT_CHARGEBACK_JOBS, FCT_JOB_USAGE, INT_GPU_INVENTORY_OBSERVED],
    kinds=["polars"],
    checks=[Check(name) for name in CHECKS],
    description="Per cluster and charge month: capacity = charged + idle, costs to the cent, departments = "
    "job detail, every job in exactly one row (over regular rows and corrections).",
)
def mart_chargeback_reconciliation_asset(step: Step) -> Built:
    focus, jobs = step.read(FCT_CHARGEBACK_FOCUS), step.read(FCT_CHARGEBACK_JOBS)
    rows = reconciliation_rows(step.store.conn, step.config, step.month, focus, jobs)
    return Built(rows, checks=reconciliation_checks(rows, step.month, step.key))


def _export(step: Step, billing: date, closed: set[date]) -> dict[str, str]:
    folder = step.config.reports.dir / f"{billing:%Y-%m}"
    if billing in closed and (folder / MANIFEST).is_file():  # written by cardhours close: frozen
        return {f"{billing:%Y-%m} {MANIFEST}": str(folder / MANIFEST)}
    paths = export_billing_month(step.store.conn, step.config.reports.dir, billing, closed)
    return {f"{billing:%Y-%m} {name}": str(path) for name, path in paths.items()}


@table_asset(
    CHARGEBACK_EXPORT,
    reads=[MART_CHARGEBACK_RECONCILIATION, FCT_CHARGEBACK_FOCUS, FCT_CHARGEBACK_JOBS, CHARGEBACK_CLOSED_MONTHS],
    kinds=["csv", "parquet"],
    description="<reports dir>/YYYY-MM/chargeback_focus.csv + .parquet (FOCUS 1.2) and chargeback_jobs.csv; "
    "a closed month's files come from the ledger (with its InvoiceId) and are frozen (MANIFEST.sha256), and "
    "the billing month booking its corrections is rewritten. Marks the month's build finished "
    "(meta.monthly_builds).",
)
def chargeback_export(step: Step) -> MaterializeResult:
    month = step.month
    closed = set(closed_months(step.store.conn))
    paths = _export(step, month, closed)
    if month in closed:
        paths |= _export(step, next_open_month(closed, month), closed)
    finish_build(step.store.conn, month, utc_now())
    return step.done({"files": MetadataValue.json(paths)})


CHARGEBACK_ASSETS = [
    fct_chargeback_jobs_asset,
    fct_chargeback_focus_asset,
    mart_chargeback_reconciliation_asset,
    chargeback_export,
]
