"""``cardhours config check``: validate a config file, and with ``--online`` ask each
Prometheus its retention."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from cardhours.cli_support import console, load_or_exit, out
from config import Config

config_app = typer.Typer(help="Configuration files.", no_args_is_help=True)


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="The TOML config file.")],
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Also ask each Prometheus its retention, and warn when the oldest month still open "
            "for corrections reaches back before it (exit 1 when a server does not answer).",
        ),
    ] = False,
) -> None:
    """Validate a config file; exit 2 with the bad keys named when it is invalid."""
    config = load_or_exit(path)
    _check_publish(path, config)
    names = ", ".join(c.name for c in config.clusters)
    out.print(f"{path}: valid ({len(config.clusters)} cluster(s): {names})", highlight=False)
    if online:
        from cardhours.cli_online import online_lines
        from pipelines.landing import utc_now

        lines = online_lines(config, utc_now())
        for line in lines:
            style = {"ok": "", "warning": "[yellow]warning[/yellow]: ", "error": "[red]error[/red]: "}[line.level]
            (out if line.level == "ok" else console).print(style + line.text, highlight=False)
        if any(line.level == "error" for line in lines):
            raise typer.Exit(1)


def _check_publish(path: Path, config: Config) -> None:
    """``[publish] marts`` against the declared tables (the config layer does not know them)."""
    if config.publish is None:
        return
    from pipelines.publish import PublishError, selected_marts

    try:
        selected_marts(config.publish)
    except PublishError as exc:
        console.print(f"[red]invalid config[/red]\n{escape(f'{path}: {exc}')}", highlight=False)
        raise typer.Exit(2) from exc
