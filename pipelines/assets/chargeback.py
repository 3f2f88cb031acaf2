"""Monthly chargeback: priced job lines, FOCUS rows, reconciliation (blocking) and the export
files. An open month writes its regular rows; a closed month (cardhours close) writes only
Correction rows, booked in the next open billing month (docs/chargeback.md)."""

from datetime import date

from dagster import AssetCheckSpec, AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from cardhours.chargeback_rows import ChargeRows, charge_lines, focus_rows, job_rows, reconciliation_rows
from cardhours.ledger import closed_months, next_open_month
from pipelines.checks.chargeback import CHECKS, reconciliation_checks
from pipelines.landing import utc_now
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from reports.focus_export import export_billing_month
from reports.manifest import MANIFEST
from warehouse import read_frame, replace_partition
from warehouse.landings import finish_build

GROUP = "chargeback"
JOBS_KEY = ["marts", "fct_chargeback_jobs"]
FOCUS_KEY = ["marts", "fct_chargeback_focus"]
RECONCILIATION_KEY = ["marts", "mart_chargeback_reconciliation"]
EXPORT_KEY = ["reports", "chargeback_export"]


def _meta(written: int, charge: ChargeRows, cost: str) -> dict:
    frame = charge.rows
    return {
        "rows": written,
        "month": str(charge.charge_month),
        "billing_month": str(charge.billing_month),
        "month_closed": charge.closed,
        "cost": MetadataValue.text(str(frame.get_column(cost).sum() if frame.height else 0)),
    }


@asset(
    key=JOBS_KEY,
    partitions_def=monthly_partitions,
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["marts", "fct_job_usage"])],
    description="Per job run and price segment: GPU-hours, unit price, cost (the per-job detail); "
    "corrections of closed months.",
)
def fct_chargeback_jobs_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    month = naive_window(context.partition_time_window)[0].date()
    with cardhours.warehouse() as conn:
        charge = job_rows(conn, cardhours.config, month, charge_lines(conn, cardhours.config, month))
        written = replace_partition(conn, "marts.fct_chargeback_jobs", charge.rows, charge.partition)
    return MaterializeResult(metadata=_meta(written, charge, "cost"))


@asset(
    key=FOCUS_KEY,
    partitions_def=monthly_partitions,
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["marts", "fct_job_usage"]), AssetDep(JOBS_KEY)],
    description="FinOps FOCUS 1.2 rows: per cluster x department x GPU model x partition x QOS x charge "
    "period, idle capacity per rates.idle_capacity, corrections of closed months.",
)
def fct_chargeback_focus_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    month = naive_window(context.partition_time_window)[0].date()
    with cardhours.warehouse() as conn:
        charge = focus_rows(conn, cardhours.config, month, charge_lines(conn, cardhours.config, month))
        written = replace_partition(conn, "marts.fct_chargeback_focus", charge.rows, charge.partition)
    metadata = _meta(written, charge, "BilledCost")
    metadata["idle_policy"] = cardhours.config.rates.idle_capacity
    return MaterializeResult(metadata=metadata)


@asset(
    key=RECONCILIATION_KEY,
    partitions_def=monthly_partitions,
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    deps=[AssetDep(FOCUS_KEY), AssetDep(JOBS_KEY), AssetDep(["marts", "fct_job_usage"])],
    check_specs=[AssetCheckSpec(name, asset=RECONCILIATION_KEY, blocking=True) for name in CHECKS],
    description="Per cluster and charge month: capacity = charged + idle, costs to the cent, departments = "
    "job detail, every job in exactly one row (over regular rows and corrections).",
)
def mart_chargeback_reconciliation_asset(
    context: AssetExecutionContext, cardhours: CardhoursResource
) -> MaterializeResult:
    month = naive_window(context.partition_time_window)[0].date()
    with cardhours.warehouse() as conn:
        focus = read_frame(conn, "SELECT * FROM marts.fct_chargeback_focus WHERE charge_month = ?", [month])
        jobs = read_frame(conn, "SELECT * FROM marts.fct_chargeback_jobs WHERE charge_month = ?", [month])
        rows = reconciliation_rows(conn, cardhours.config, month, focus, jobs)
        written = replace_partition(conn, "marts.mart_chargeback_reconciliation", rows, {"month": month})
    return MaterializeResult(
        metadata={"rows": written, "month": str(month)},
        check_results=reconciliation_checks(rows, month, RECONCILIATION_KEY),
    )


def _export(conn, cardhours: CardhoursResource, billing: date, closed: set[date]) -> dict[str, str]:
    folder = cardhours.config.reports.dir / f"{billing:%Y-%m}"
    if billing in closed and (folder / MANIFEST).is_file():  # written by cardhours close: frozen
        return {f"{billing:%Y-%m} {MANIFEST}": str(folder / MANIFEST)}
    paths = export_billing_month(conn, cardhours.config.reports.dir, billing, closed)
    return {f"{billing:%Y-%m} {name}": str(path) for name, path in paths.items()}


@asset(
    key=EXPORT_KEY,
    partitions_def=monthly_partitions,
    group_name=GROUP,
    kinds={"csv", "parquet"},
    deps=[AssetDep(RECONCILIATION_KEY)],
    description="<reports dir>/YYYY-MM/chargeback_focus.csv + .parquet (FOCUS 1.2) and chargeback_jobs.csv; "
    "a closed month's files come from the ledger (with its InvoiceId) and are frozen (MANIFEST.sha256), and "
    "the billing month booking its corrections is rewritten. Marks the month's build finished "
    "(meta.monthly_builds).",
)
def chargeback_export(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    month = naive_window(context.partition_time_window)[0].date()
    with cardhours.warehouse() as conn:
        closed = set(closed_months(conn))
        paths = _export(conn, cardhours, month, closed)
        if month in closed:
            paths |= _export(conn, cardhours, next_open_month(closed, month), closed)
        finish_build(conn, month, utc_now())
    return MaterializeResult(metadata={"month": str(month), "files": MetadataValue.json(paths)})


CHARGEBACK_ASSETS = [
    fct_chargeback_jobs_asset,
    fct_chargeback_focus_asset,
    mart_chargeback_reconciliation_asset,
    chargeback_export,
]
