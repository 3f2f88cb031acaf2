"""``cardhours job <id>``: one job's efficiency report from the warehouse (docs/reports.md, "A job
report on demand"). Reads the warehouse read-only: refused, naming the holder, while a run or
close writes it."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from cardhours.cli_support import BUSY_EXIT, fail, load_or_exit, month_option, out, require_warehouse
from config import Config


def _month(value: str | None) -> str | None:
    return None if value is None else month_option(value)


def job(
    job_id: Annotated[
        str, typer.Argument(help="Job id: 123, 123_4, an array's 123, a Kubernetes key or pod/owner name.")
    ],
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    cluster: Annotated[str | None, typer.Option(help="Cluster (needed when the id is in several).")] = None,
    month: Annotated[
        str | None, typer.Option(help="Only this month, YYYY-MM (default: every month built).", callback=_month)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Print one job's efficiency report: who and what, GPUs, GPU-hours, utilization by the best
    signal, memory, power and energy, its flags with evidence and what to do, its cost, its runs
    and one line per GPU. Exit 1 when the id is unknown or in several clusters, 75 while the
    warehouse is being written."""
    settings = load_or_exit(config)
    first = date.fromisoformat(month + "-01") if month else None
    if cluster is not None and cluster not in {c.name for c in settings.clusters}:
        names = ", ".join(c.name for c in settings.clusters)
        raise fail("unknown cluster", f"{cluster!r} is not in {config} (clusters: {names})")
    runs, frames = _read(settings, job_id, cluster, first)
    from reports.job_report import JobInputs, job_report

    steps = {c.name: c.sample_step_seconds for c in settings.clusters}
    inputs = JobInputs(runs, **frames, inventory=settings.inventory_frame(), step_seconds=steps,
                       currency=settings.rates.currency)  # fmt: skip
    report = job_report(job_id, inputs)
    if as_json:
        out.print_json(json.dumps(report, default=str), highlight=False)
        return
    from reports.job_report_text import render_job_report

    out.print(render_job_report(report), highlight=False)


def _read(settings: Config, job_id: str, cluster: str | None, month: date | None):
    """The job's runs and frames, read-only; exits naming the problem."""
    from warehouse import connect
    from warehouse.books.job_reads import find_runs, read_job_frames, searched
    from warehouse.lock import busy_holder

    path = settings.warehouse.path
    require_warehouse(path, "no report")
    busy = busy_holder(path)
    if busy is not None:
        raise fail("no report", f"{busy} (cardhours job reads it when nothing writes)", BUSY_EXIT)
    try:
        conn = connect(path, read_only=True)
    except duckdb.IOException as exc:
        raise fail("no report", f"warehouse {path} is open for writing by another program; try again when it is done: "
                   f"{str(exc).splitlines()[0]}", BUSY_EXIT) from exc  # fmt: skip
    with conn:
        runs = find_runs(conn, job_id, cluster, month)
        if runs.is_empty():
            raise _unknown(searched(conn, job_id, cluster, month), settings)
        clusters = sorted(set(runs["cluster"]))
        if len(clusters) > 1:
            raise fail("several jobs", f"job {job_id} is in clusters {', '.join(clusters)}: add --cluster NAME")
        return runs, read_job_frames(conn, runs)


def _unknown(search, settings: Config) -> typer.Exit:
    clusters = ", ".join(search.clusters) or "none with jobs"
    months = ", ".join(f"{m:%Y-%m}" for m in search.months) or "none built"
    lake = settings.warehouse.lake / "marts" / "fct_job_usage"
    how = f"the month's jobs are in the review (reports/YYYY-MM/review.html) and in {lake}/*/part-0.parquet"
    return fail("unknown job", f"no job {search.job_id!r} in cluster(s) {clusters}, month(s) {months}; {how}")
