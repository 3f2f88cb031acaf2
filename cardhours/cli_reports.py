"""``cardhours index``: rewrite the reports folder's index.html from the files it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cardhours.cli_support import fail, load_or_exit, out


def index(config: Annotated[Path, typer.Option("--config", help="The TOML config file.")]) -> None:
    """Rewrite <reports dir>/index.html: every month of the folder, newest first, with its review,
    department pages and exports and their sizes (the monthly build also does it after each month).
    Reads only the folder, not the warehouse. Exit 1 if the folder cannot be read or written."""
    from reports.archive_index import scan_archive, write_index
    from reports.templating import ReportTemplateError

    settings = load_or_exit(config)
    folder = settings.reports.dir
    if not folder.is_dir():
        raise fail("index not written", f"no reports folder at {folder} ([reports] dir): run a month first")
    try:
        path = write_index(folder, settings.reports.templates_dir)
        months = scan_archive(folder)
    except (OSError, ReportTemplateError) as exc:
        raise fail(
            "index not written", f"{folder}: {exc}; fix that and run cardhours index --config {config} again"
        ) from exc
    out.print(f"index of {len(months)} month(s) written to {path}", highlight=False, markup=False)
