"""``cardhours close`` and ``cardhours ledger verify`` (docs/chargeback.md, "Closed months")."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated

import typer

from cardhours.cli_support import (
    console,
    fail,
    load_or_exit,
    locked,
    month_option,
    opened,
    out,
    reason_option,
    require_warehouse,
)

ledger_app = typer.Typer(help="The closed chargeback ledger.", no_args_is_help=True)
EXPORTS = ("chargeback_focus.csv", "chargeback_focus.parquet", "chargeback_jobs.csv")


def _frozen_exports(conn, settings, month: date) -> Path:
    """The closed month's export files, written from the ledger, and their MANIFEST.sha256
    (left alone when the manifest exists: the files are frozen); then the reports folder's index."""
    from reports.archive_index import write_index
    from reports.focus_export import write_chargeback_files
    from reports.manifest import MANIFEST, write_manifest
    from warehouse.books.ledger import ledger_rows

    reports_dir = settings.reports.dir
    folder = reports_dir / f"{month:%Y-%m}"
    manifest = folder / MANIFEST
    if not manifest.is_file():
        focus, jobs = ledger_rows(conn, month)
        paths = write_chargeback_files(focus, jobs, reports_dir, f"{month:%Y-%m}")
        manifest = write_manifest(folder, paths.values())
    write_index(reports_dir, settings.reports.templates_dir)
    return manifest


def close(
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    month: Annotated[str, typer.Option(help="Billing month to close, YYYY-MM (UTC).", callback=month_option)],
    accept_gaps: Annotated[
        str | None,
        typer.Option(
            "--accept-gaps",
            help="Close although days are missing or failed, the month is in its grace period, or "
            "coverage/quarantine are out of limits; the reason is stored with the month.",
            callback=reason_option,
        ),
    ] = None,
) -> None:
    """Close a billing month: freeze its chargeback rows in the hash-chained ledger.

    Refused unless every day landed, the grace period is over and the marts are fresh and
    recompute to the cent. Writes a SHA-256 manifest of the month's export files. Later changes
    to the month become Correction rows in the next open month; there is no reopen. Exit 1 if
    it cannot be closed (everything in the way is named), 75 if the warehouse is busy."""
    from reports.templating import ReportTemplateError
    from warehouse.books.close import close_month
    from warehouse.books.ledger import CloseError

    settings = load_or_exit(config)
    path, first = settings.warehouse.path, date.fromisoformat(f"{month}-01")
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    require_warehouse(path, "not closed")
    with locked(path, f"cardhours close --month {month}", "not closed"), opened(settings, "not closed") as conn:
        try:
            result = close_month(conn, settings, first, now, accept_gaps)
        except CloseError as exc:
            raise fail("not closed", str(exc)) from exc
        try:
            manifest = _frozen_exports(conn, settings, first)
        except (OSError, ReportTemplateError) as exc:
            raise fail(
                "closed, but its files are not written",
                f"{month} is closed in the ledger; writing its "
                f"export files, MANIFEST.sha256 under {settings.reports.dir / month} or index.html failed ({exc}): fix "
                "that and run cardhours close again, which writes them",
            ) from exc
    state = (
        f"was already closed at {result.closed_at:%Y-%m-%d %H:%M:%S}Z; ledger unchanged" if result.already else "closed"
    )
    out.print(
        f"month {month} {state}: {result.focus_rows} FOCUS rows, {result.job_lines} job lines, "
        f"billed {result.billed_cost} {settings.rates.currency}",
        highlight=False,
    )
    out.print(
        f"  head hash: {result.head_hash or 'none (closed before the hash chain; the next close seals it)'}",
        highlight=False,
    )
    if result.accepted_gaps:
        out.print(f"  gaps accepted: {result.accepted_gaps}", highlight=False)
    elif accept_gaps and not result.already:
        console.print("--accept-gaps was not needed: the month had no gaps (no reason stored)", highlight=False)
    for line in result.coverage_gaps:
        out.print(f"  coverage gap (listed, not blocking): {line}", highlight=False)
    if result.sealed:
        out.print(
            f"  sealed:    {', '.join(f'{m:%Y-%m}' for m in result.sealed)} (closed before the hash chain)",
            highlight=False,
        )
    out.print(f"  ledger:    marts.chargeback_ledger in {path}", highlight=False)
    for name in EXPORTS:
        out.print(f"  export:    {settings.reports.dir / month / name}", highlight=False)
    out.print(f"  manifest:  {manifest} (check: cd {manifest.parent} && sha256sum -c {manifest.name})", highlight=False)


@ledger_app.command("verify")
def verify(config: Annotated[Path, typer.Option("--config", help="The TOML config file.")]) -> None:
    """Recompute the closed ledger's hash chain.

    Exit 1 naming the first row that differs (table, billing month, row, expected vs found),
    75 if the warehouse is busy."""
    from warehouse.books.ledger_verify import verify_ledger

    settings = load_or_exit(config)
    path = settings.warehouse.path
    require_warehouse(path, "not verified")
    with locked(path, "cardhours ledger verify", "not verified"), opened(settings, "not verified") as conn:
        result = verify_ledger(conn)
    if result.problem:
        raise fail("ledger verify FAILED", result.problem)
    if result.head_month is None:
        out.print(f"ledger ok: no closed months in {path}", highlight=False)
        return
    out.print(
        f"ledger ok: {result.months} closed month(s), {result.rows} rows; head hash of "
        f"{result.head_month:%Y-%m}: {result.head_hash}",
        highlight=False,
    )
