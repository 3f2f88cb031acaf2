"""What every ``cardhours`` command shares: the consoles, the progress bar, loading the config, the month option,
and opening the warehouse under its lock with messages a person can act on."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from config import Config, ConfigError, load_config

console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
BUSY_EXIT = 75  # EX_TEMPFAIL: another process holds the warehouse; try again later

ALL_DAYS = "all"  # cardhours run --reingest all: every day of the month


def progress_bar() -> Progress:
    """The progress bar of long commands, on stderr."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def load_or_exit(path: Path) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        console.print(f"[red]invalid config[/red]\n{escape(str(exc))}", markup=True, highlight=False)
        raise typer.Exit(2) from exc


def month_option(value: str) -> str:
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", value):
        raise typer.BadParameter(f"{value!r} is not a month like 2026-10")
    return value


def reason_option(value: str | None) -> str | None:
    """``--accept-gaps``: a reason a person can read later, never empty."""
    if value is not None and not value.strip():
        raise typer.BadParameter('needs a reason, e.g. --accept-gaps "exporter down 10-03, agreed with finance"')
    return value.strip() if value else None


def fail(verdict: str, message: str, code: int = 1) -> typer.Exit:
    """Print ``verdict: message`` to stderr; the caller raises the returned exit."""
    console.print(f"[red]{verdict}[/red]: {escape(message)}", highlight=False)  # [clusters.x] is text
    return typer.Exit(code)


def require_warehouse(path: Path, verdict: str) -> None:
    """Exit 1 when there is no warehouse file yet (nothing is created)."""
    if not path.is_file():
        raise fail(verdict, f"no warehouse at {path}; run the month first")


@contextmanager
def locked(path: Path, what: str, verdict: str) -> Iterator[None]:
    """Hold the warehouse lock for the block; busy -> the holder named, exit BUSY_EXIT."""
    from warehouse.lock import WarehouseBusy, acquire_warehouse, release_warehouse

    try:
        acquire_warehouse(path, what)
    except WarehouseBusy as exc:
        raise fail(verdict, str(exc), BUSY_EXIT) from exc
    try:
        yield
    finally:
        release_warehouse(path)


@contextmanager
def opened(settings: Config, verdict: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """The warehouse, migrated, the lake attached; exit 1 naming the problem when it cannot be opened."""
    from pipelines.store import open_warehouse
    from warehouse import MigrationError

    path = settings.warehouse.path
    try:
        conn = open_warehouse(settings)
    except MigrationError as exc:
        raise fail(verdict, f"warehouse {path}: {exc}") from exc
    except duckdb.IOException as exc:
        first = str(exc).splitlines()[0]
        raise fail(
            verdict,
            f"warehouse {path} is open in another program (not a cardhours run or close, which "
            f"would be named): {first}",
            BUSY_EXIT,
        ) from exc
    try:
        yield conn
    finally:
        conn.close()
