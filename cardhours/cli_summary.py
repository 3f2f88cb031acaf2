"""What ``cardhours run`` prints when the month is built: the days read, where the outputs
are, the month's coverage gaps and its data quality."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from cardhours.cli_support import out


def _days_line(outputs) -> str:
    """``31 days ingested`` or ``2 days ingested, 29 already landed (not read again: --reingest)``."""
    text = f"{len(outputs.ingested)} day{'s' if len(outputs.ingested) != 1 else ''} ingested"
    if outputs.already_landed:
        text += f", {outputs.already_landed} already landed (not read again; --reingest DAY|all reads them)"
    if outputs.late_sacct:
        text += f"; sacct landed again for {', '.join(outputs.late_sacct)} (records changed since they landed)"
    return text


def print_summary(outputs, month: str, accept_gaps: str | None) -> None:
    """The summary of a built month (``cardhours.runner.MonthOutputs``)."""
    out.print(f"month {outputs.month}: {_days_line(outputs)} + monthly marts", highlight=False, markup=False)
    for failed in outputs.failed_days:
        out.print(f"  built over a failed day ({accept_gaps}): {failed}", highlight=False, markup=False)
    month_dir = outputs.review.parent
    pages = sorted((month_dir / "departments").glob("*.html"))
    lines = [("warehouse", str(outputs.warehouse)), ("review", str(outputs.review))]
    if pages:
        lines.append(("departments", f"{len(pages)} pages in {month_dir / 'departments'}"))
    for label, name in (
        ("flags", "flagged_jobs.csv"),
        ("chargeback", "chargeback_focus.csv"),
        ("chargeback", "chargeback_focus.parquet"),
        ("job detail", "chargeback_jobs.csv"),
    ):
        if (month_dir / name).is_file():
            lines.append((label, str(month_dir / name)))
    if (outputs.reports_dir / "index.html").is_file():
        lines.append(("index", str(outputs.reports_dir / "index.html")))
    for label, where in lines:
        out.print(f"  {label + ':':<13}{where}", highlight=False, markup=False)
    gaps, quality = _quality_lines(outputs.warehouse, month)
    for line in gaps:
        out.print(f"  {'gap:':<13}{line}", highlight=False, markup=False)
    for line in quality:
        out.print(f"  {'quality:':<13}{line}", highlight=False, markup=False)


def _quality_lines(warehouse_path: Path, month: str) -> tuple[list[str], list[str]]:
    """The month's coverage gaps (days a source answered with nothing, by cluster and source,
    with their causes); its quarantined input by cluster and source (with reasons) and its
    runaway runs."""
    from pipelines.data_quality import month_coverage_gaps, quarantine_summary, runaway_runs
    from warehouse import connect
    from warehouse.books.landings import coverage_gap_lines

    first = date.fromisoformat(f"{month}-01")
    with connect(warehouse_path) as conn:
        summary, runaways = quarantine_summary(conn, first), runaway_runs(conn, first)
        gaps = coverage_gap_lines(month_coverage_gaps(conn, first))
    lines = []
    for (cluster, source), group in summary.group_by("cluster", "source", maintain_order=True):
        reasons = ", ".join(f"{reason} {rows:,}" for reason, rows in group.select("reason", "rows").iter_rows())
        lines.append(f"{cluster}: {int(group['rows'].sum()):,} quarantined from {source} ({reasons})")
    if runaways.height:
        lines.append(f"{runaways.height} runaway run(s) billed to an inferred end (review: Data quality)")
    return gaps, lines or ["nothing quarantined"]
