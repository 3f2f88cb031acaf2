"""The ``cardhours`` command: simulate, run a month and the demo; the other commands live beside
it (cardhours/cli_*.py: close and ledger, job, index, deliver, publish, notify-users, config, bench)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from cardhours.cli_bench import bench_app
from cardhours.cli_config import config_app
from cardhours.cli_deliver import deliver
from cardhours.cli_job import job
from cardhours.cli_ledger import close, ledger_app
from cardhours.cli_notices import notify_users
from cardhours.cli_publish import publish
from cardhours.cli_reports import index
from cardhours.cli_summary import print_summary
from cardhours.cli_support import (
    ALL_DAYS,
    BUSY_EXIT,
    console,
    load_or_exit,
    month_option,
    out,
    progress_bar,
    reason_option,
)
from config import Config
from contracts.runs import FORCE_SHRINK_FLAG

app = typer.Typer(help="GPU utilization analytics and chargeback.", no_args_is_help=True, add_completion=False)
app.add_typer(config_app, name="config")
app.add_typer(bench_app, name="bench")
app.add_typer(ledger_app, name="ledger")
app.command()(close)
app.command()(job)
app.command()(index)
app.command()(deliver)
app.command()(publish)
app.command("notify-users")(notify_users)
_load_or_exit = load_or_exit
_month = month_option

DEMO_START = date(2026, 10, 1)
DEMO_DAYS = 31
DEMO_GPUS = 128
DEMO_SEED = 7
# The demo's site: 88 GPUs on Slurm nodes and the simulator's 40-GPU Kubernetes pool (128 in
# all, as many as the Slurm-only demo had). Its kube-state-metrics series are scraped every 300 s
# and written one OpenMetrics file per day, read a day at a time: at the DCGM step of 30 s in
# one file, the month's pod series were 8.7 GB, read whole for each day.
DEMO_SLURM_GPUS = 88
DEMO_KUBE_STATE_STEP = 300


@app.command()
def simulate(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory.")],
    gpus: Annotated[int, typer.Option(min=8, help="GPUs (rounded up to whole 8-GPU nodes).")] = DEMO_GPUS,
    days: Annotated[int, typer.Option(min=1, help="Days to simulate.")] = 30,
    start: Annotated[str, typer.Option(help="First day, YYYY-MM-DD (UTC).")] = DEMO_START.isoformat(),
    seed: Annotated[int, typer.Option(help="Random seed: same seed, same files.")] = DEMO_SEED,
    step: Annotated[int, typer.Option(min=1, help="Sample spacing in seconds.")] = 30,
    metrics_format: Annotated[str, typer.Option(help="parquet, om (OpenMetrics for promtool) or both.")] = "both",
    cluster: Annotated[str, typer.Option(help="Cluster name.")] = "sim",
    kube: Annotated[
        bool, typer.Option("--kube", help="Add a Kubernetes node pool: kube_state.om, truth_pods.parquet.")
    ] = False,
    repartition_mig: Annotated[
        bool, typer.Option("--repartition-mig", help="Re-partition a MIG node mid-window (needs 32 GPUs or more).")
    ] = False,
    drain_node: Annotated[
        bool, typer.Option("--drain-node", help="Drain a node for a while: sacctmgr_events.txt.")
    ] = False,
) -> None:
    """Write a simulated cluster's inputs: metrics, sacct.txt, a config and truth.parquet."""
    from simulate.run import simulate as run_simulation

    if metrics_format not in ("parquet", "om", "both"):
        raise typer.BadParameter("--metrics-format must be parquet, om or both")
    first = date.fromisoformat(start)
    if repartition_mig and gpus < 32:  # the simulator's first MIG node comes with the fourth node
        raise typer.BadParameter("--repartition-mig needs a MIG node: use --gpus 32 or more")
    with progress_bar() as progress:
        task = progress.add_task("simulate", total=days)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        result = run_simulation(
            out_dir,
            gpus=gpus,
            days=days,
            start=first,
            seed=seed,
            step_seconds=step,
            metrics_format=metrics_format,
            cluster=cluster,
            progress=report,
            kube=kube,
            repartition=repartition_mig,
            drain=drain_node,
        )
    out.print(f"simulated {days} days of {gpus} GPUs into {out_dir}", highlight=False)
    for name, path in result.paths().items():
        out.print(f"  {name}: {path}", highlight=False)


@app.command()
def run(
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    month: Annotated[str, typer.Option(help="Month to build, YYYY-MM (UTC).", callback=_month)],
    accept_gaps: Annotated[
        str | None,
        typer.Option(
            "--accept-gaps",
            help="Build the month although a day failed or is missing (every day is tried); "
            "the reason is stored with the build.",
            callback=reason_option,
        ),
    ] = None,
    reingest: Annotated[
        list[str] | None,
        typer.Option(
            "--reingest",
            help="Read this day (YYYY-MM-DD) from the sources again although it landed; 'all' for every "
            "day of the month. Repeat for several days.",
            metavar="DAY|all",
        ),
    ] = None,
    marts_only: Annotated[
        bool, typer.Option("--marts-only", help="Read no source: rebuild the marts and reports from what has landed.")
    ] = False,
    force_shrink: Annotated[
        bool,
        typer.Option(
            FORCE_SHRINK_FLAG,
            help="Replace a landed day even when the new read holds fewer samples or jobs (refused otherwise: "
            "the source has usually lost data, e.g. past its retention).",
        ),
    ] = False,
) -> None:
    """Land the month's days that have not landed, rebuild its marts and reports through Dagster,
    and print where the outputs went.

    Days that landed successfully are not read again (--reingest reads them; a landed day's sacct is
    read again when a job was still open and its records changed). A failed day stops it before the
    monthly build (exit 1, the day named); exit 75 if the warehouse is busy."""
    settings = _load_or_exit(config)
    days = _reingest_days(month, reingest or [], marts_only)
    _run_month(config, settings, month, accept_gaps, days, marts_only, force_shrink)


def _reingest_days(month: str, values: list[str], marts_only: bool) -> list[str]:
    """The --reingest values checked: 'all' or days of ``month`` (exit 2 naming the bad one)."""
    if values and marts_only:
        raise typer.BadParameter("--marts-only reads no source: leave out --reingest", param_hint="--reingest")
    for value in values:
        if value != ALL_DAYS and not (value.startswith(month + "-") and _is_date(value)):
            raise typer.BadParameter(
                f"{value!r} is not a day of {month} (YYYY-MM-DD) or 'all'", param_hint="--reingest"
            )
    return values


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _run_month(
    config_path: Path,
    settings: Config,
    month: str,
    accept_gaps: str | None = None,
    reingest: list[str] | None = None,
    marts_only: bool = False,
    force_shrink: bool = False,
) -> None:
    from cardhours.runner import RunFailed, run_month
    from warehouse import WarehouseBusy

    with progress_bar() as progress:
        task = progress.add_task(f"run {month}", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        try:
            outputs = run_month(
                config_path,
                settings,
                month,
                progress=report,
                accept_gaps=accept_gaps,
                reingest=reingest or [],
                marts_only=marts_only,
                force_shrink=force_shrink,
            )
        except RunFailed as exc:
            console.print(f"[red]run failed[/red]: {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from exc
        except WarehouseBusy as exc:
            console.print(f"[red]not run[/red]: {escape(str(exc))}", highlight=False)
            raise typer.Exit(BUSY_EXIT) from exc
    print_summary(outputs, month, accept_gaps)
    if settings.publish is not None:  # the monthly job's publish/postgres asset succeeded with it
        from warehouse.publish.postgres import target

        out.print(f"  {'published:':<13}{target(settings.publish)}", highlight=False, markup=False)


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where the demo's inputs, warehouse and reports go.")] = Path(
        "demo"
    ),
    gpus: Annotated[int, typer.Option(min=8, help="GPUs of the simulated cluster's Slurm nodes.")] = DEMO_SLURM_GPUS,
) -> None:
    """Simulate a month of a small mixed site and run it end to end: one cluster with Slurm
    nodes (11 x 8 GPUs) and a Kubernetes node pool (5 x 8 GPUs: inference Deployments, Kueue
    and Volcano gangs, notebooks, MIG), so the review shows both schedulers and the queues."""
    from simulate.run import simulate as run_simulation

    month = DEMO_START.strftime("%Y-%m")
    with progress_bar() as progress:
        task = progress.add_task("simulate", total=DEMO_DAYS)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=f"simulate: {stage}", completed=done, total=total)

        result = run_simulation(
            out_dir,
            gpus=gpus,
            days=DEMO_DAYS,
            start=DEMO_START,
            seed=DEMO_SEED,
            step_seconds=30,
            metrics_format="parquet",
            cluster="demo",
            progress=report,
            kube=True,
            kube_state_step=DEMO_KUBE_STATE_STEP,
            kube_state_daily=True,
        )
    config_path = result.config_path
    _run_month(config_path, _load_or_exit(config_path), month)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
