"""``cardhours publish --month YYYY-MM``: the month's public marts copied to the PostgreSQL
database of ``[publish]`` (docs/publish.md). Reads the warehouse read-only: refused, naming the
holder, while a run or close writes it."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from cardhours.cli_support import BUSY_EXIT, fail, load_or_exit, month_option, out, require_warehouse


def publish(
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    month: Annotated[str, typer.Option(help="Month to publish, YYYY-MM (UTC).", callback=month_option)],
) -> None:
    """Replace the month's rows of the public marts ([publish] marts, default all) in PostgreSQL, in
    one transaction, and print each table's rows and where they went. Exit 1 when the config has no
    [publish], PostgreSQL refuses or a table no longer matches its mart; 75 while the warehouse is
    being written."""
    from pipelines.landing import utc_now
    from pipelines.publish import PublishError
    from pipelines.publish import publish as publish_month
    from warehouse import connect
    from warehouse.lock import busy_holder
    from warehouse.publish.pg_types import UnsupportedType
    from warehouse.publish.postgres import target

    settings = load_or_exit(config)
    if settings.publish is None:
        raise fail("nothing published", f"{config} has no [publish] section: add one (docs/publish.md)")
    path = settings.warehouse.path
    require_warehouse(path, "nothing published")
    busy = busy_holder(path)
    if busy is not None:
        raise fail("nothing published", f"{busy} (cardhours publish reads it when nothing writes)", BUSY_EXIT)
    try:
        duck = connect(path, read_only=True)
    except duckdb.IOException as exc:
        raise fail("nothing published", f"warehouse {path} is open for writing by another program; try again "
                   f"when it is done: {str(exc).splitlines()[0]}", BUSY_EXIT) from exc  # fmt: skip
    where = target(settings.publish)
    out.print(f"publishing {month} to {where}", highlight=False, markup=False)
    first = date.fromisoformat(month + "-01")

    def progress(line: str) -> None:
        out.print(f"  {line}", highlight=False, markup=False)

    try:
        with duck:
            done = publish_month(duck, settings.publish, first, utc_now(), progress)
    except (PublishError, UnsupportedType, LookupError, ValueError) as exc:
        raise fail("nothing published", str(exc)) from exc
    total = sum(item.rows for item in done)
    out.print(f"published {len(done)} tables, {total} rows of {month} to {where} (one transaction)",
              highlight=False, markup=False)  # fmt: skip
