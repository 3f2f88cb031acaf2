"""``cardhours deliver --month YYYY-MM``: e-mail the month's review, department pages and finance
files as ``[delivery]`` says (docs/reports.md, "Delivery by e-mail"). What was sent is recorded
in meta.deliveries: a rerun sends only what is missing, ``--resend`` sends everything again,
``--dry-run DIR`` writes the messages as .eml files and sends nothing."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from cardhours.cli_support import fail, load_or_exit, locked, month_option, opened, out, require_warehouse

VERDICT = "not delivered"


def deliver(
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    month: Annotated[str, typer.Option(help="Month to deliver, YYYY-MM (UTC).", callback=month_option)],
    resend: Annotated[bool, typer.Option("--resend", help="Send again what was already sent this month.")] = False,
    dry_run: Annotated[
        Path | None,
        typer.Option("--dry-run", help="Write the messages to this folder as .eml files; send nothing."),
    ] = None,
) -> None:
    """E-mail the month: the review to operations, each department's page to its managers, the
    chargeback export and flagged job detail to finance; prints what went to whom. Exit 1 when a
    message was not sent (each named, with what to check), 75 while the warehouse is being written."""
    from pipelines.delivery import deliver_month
    from reports.delivery import DeliveryFailed

    settings = load_or_exit(config)
    if settings.delivery is None:
        raise fail(VERDICT, f"{config} has no [delivery] section: add one (docs/reports.md, 'Delivery by e-mail')")
    path, first = settings.warehouse.path, date.fromisoformat(f"{month}-01")
    require_warehouse(path, VERDICT)
    with locked(path, f"cardhours deliver --month {month}", VERDICT), opened(settings, VERDICT) as conn:
        try:
            outcome = deliver_month(conn, settings, first, str(config), resend=resend, dry_run=dry_run)
        except DeliveryFailed as exc:
            for line in exc.outcome.lines():
                out.print(line, highlight=False, markup=False)
            raise fail(VERDICT, f"{len(exc.outcome.failed)} message(s) not sent; a rerun sends only those") from exc
    for line in outcome.lines():
        out.print(line, highlight=False, markup=False)
    if not (outcome.sent or outcome.written or outcome.skipped):
        out.print("nothing to deliver: [delivery] names no recipients for this month", highlight=False, markup=False)
