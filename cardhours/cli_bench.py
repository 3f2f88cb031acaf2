"""``cardhours bench``: benchmarks against real services (a Prometheus back-filled with
simulated series; the month's marts built through Dagster)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from cardhours.cli_support import console, out, progress_bar
from config.cluster import DEFAULT_GPUS_PER_SHARD

bench_app = typer.Typer(help="Benchmarks against real services.", no_args_is_help=True)


def _run(bench: Callable[..., Any], error: type[Exception], report: Callable[[Any, Any], None], **settings) -> None:
    """Run ``bench`` with a progress bar on stderr; print its ``report`` (the last line: JSON),
    or exit 1 naming what failed."""
    with progress_bar() as progress:
        task = progress.add_task("bench", total=None)

        def stage(name: str, done: int, total: int) -> None:
            progress.update(task, description=name, completed=done, total=total or None)

        try:
            result = bench(progress=stage, say=lambda text: console.print(text, highlight=False), **settings)
        except error as exc:
            console.print(f"[red]bench failed[/red]: {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from exc
    report(result, out)


@bench_app.command("ingest")
def bench_ingest(
    gpus: Annotated[int, typer.Option(min=8, help="Simulated GPUs (whole 8-GPU nodes).")] = 256,
    hours: Annotated[int, typer.Option(min=1, help="Hours of samples to back-fill and read.")] = 24,
    step: Annotated[int, typer.Option(min=1, help="Sample spacing in seconds.")] = 15,
    workdir: Annotated[Path | None, typer.Option(help="Work directory (default: a new temporary one).")] = None,
    keep: Annotated[bool, typer.Option(help="Keep the work directory afterwards.")] = False,
    rounds: Annotated[int, typer.Option(min=1, help="Timed rounds of ours and raw (the fastest counts).")] = 3,
    server_cpus: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Run the server on this many CPUs of its own and the timed readers on the others "
            "(Linux; default: all share every CPU).",
        ),
    ] = None,
    decoder: Annotated[
        str,
        typer.Option(
            help="cardhours' decoder: auto (numba when cardhours[fast] is installed, else pyarrow), numba or pyarrow."
        ),
    ] = "auto",
    gpus_per_shard: Annotated[
        int,
        typer.Option(min=1, help="Read the day in shards of at most this many GPUs, as [clusters.metrics] does."),
    ] = DEFAULT_GPUS_PER_SHARD,
) -> None:
    """Back-fill a real Prometheus with simulated dcgm-exporter series, then time cardhours'
    ingest against a raw HTTP fetch of the same requests and prometheus-api-client's
    DataFrame path. The last line printed is the result as JSON."""
    from cardhours.bench.ingest import BenchError, print_report, run_ingest_bench

    _run(
        run_ingest_bench,
        BenchError,
        print_report,
        gpus=gpus,
        hours=hours,
        step_seconds=step,
        workdir=workdir,
        keep=keep,
        rounds=rounds,
        server_cpus=server_cpus,
        decoder=decoder,
        gpus_per_shard=gpus_per_shard,
    )


@bench_app.command("marts")
def bench_marts(
    gpus: Annotated[int, typer.Option(min=8, help="Simulated GPUs (whole 8-GPU nodes).")] = 1000,
    days: Annotated[int, typer.Option(min=1, help="Days of landed data, from 2026-09-01.")] = 30,
    step: Annotated[int, typer.Option(min=1, help="Sample spacing in seconds.")] = 15,
    workdir: Annotated[
        Path | None, typer.Option(help="Work directory, reused across runs (default: a new temporary one).")
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the work directory afterwards.")] = False,
    rounds: Annotated[int, typer.Option(min=1, help="Timed builds (the fastest counts).")] = 1,
    compare_paths: Annotated[
        bool, typer.Option(help="Also time the attribution SQL attributing every minute row, against whole hours.")
    ] = True,
) -> None:
    """Land simulated days (untimed), then time building the month's job runs, attribution and
    marts through Dagster. The last line printed is the result as JSON."""
    from cardhours.bench.marts import BenchError, print_report, run_marts_bench

    _run(
        run_marts_bench,
        BenchError,
        print_report,
        gpus=gpus,
        days=days,
        step_seconds=step,
        workdir=workdir,
        keep=keep,
        rounds=rounds,
        compare_paths=compare_paths,
    )
