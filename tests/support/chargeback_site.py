"""A one-cluster site on a temp warehouse for the chargeback and close tests: its config, August
runs, fct_job_usage written with every day landed, the chargeback assets after the monthly
job's gate, and `cardhours close`."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import polars as pl
from dagster import materialize
from typer.testing import CliRunner, Result

from cardhours.cli import app
from pipelines.assets.chargeback import CHARGEBACK_ASSETS
from pipelines.assets.gate import GATE_STEP, month_landed
from pipelines.resources import CardhoursResource
from tests.support import chargeback_frames
from tests.support.chargeback_frames import usage
from tests.support.landings import land_month
from tests.support.warehouse_read import read
from warehouse import connect, replace_partition

# Months of the past (Dagster has no partition for the current month): AUG closes first.
AUG, SEP, OCT = date(2026, 8, 1), date(2026, 9, 1), date(2026, 10, 1)
CONFIG = """
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "c1"

[clusters.metrics]
source = "file"
path = "metrics"

[clusters.slurm]  # a cluster with a scheduler is charged (the tests write its jobs' usage directly)
sacct_file = "sacct.txt"

[[clusters.inventory.node_groups]]
hosts = "n1"
gpu_model = "H100"
model_name = "NVIDIA H100 80GB HBM3"
gpus_per_node = 4
gpu_memory_mib = 81559

[[clusters.inventory.node_groups]]
hosts = "m1"
gpu_model = "A100"
model_name = "NVIDIA A100-SXM4-80GB"
gpus_per_node = 1
gpu_memory_mib = 81920
mig_layout = ["3g.40gb", "3g.40gb", "1g.10gb"]

[org.divisions.research]
name = "Research"

[org.departments.nlp]
name = "Language Models"
division = "research"

[org.departments.speech]
name = "Speech"
division = "research"

[rates]
currency = "EUR"
idle_capacity = "proportional"

[rates.gpu_hour]
H100 = 2.5
A100 = 1.4

[rates.qos_multipliers]
high = 1.5

[[rates.price_changes]]
gpu_model = "H100"
gpu_hour = 2.8
effective = 2026-08-20T06:30:15Z
"""
SOURCES = {"c1": ["dcgm", "sacct"]}  # what lands a day for the site's one cluster (ClusterConfig.sources)
cli = CliRunner()


def run(job_id: str, start: datetime, hours: float, **kw) -> dict:
    """A fct_job_usage row of August (unless the month is given)."""
    kw.setdefault("month_start", datetime(2026, 8, 1))
    kw.setdefault("month_end", datetime(2026, 9, 1))
    return chargeback_frames.run(job_id, start, hours, **kw)


def august() -> list[dict]:
    return [
        run("100", datetime(2026, 7, 31, 20), 10, gpus=2),
        run("101", datetime(2026, 8, 20, 1), 11, gpus=4, qos="high"),
        run("102", datetime(2026, 8, 5, 3, 17, 11), 33.3, department="speech"),
        run("103", datetime(2026, 8, 7), 50, gpus=3 / 7, gpu_model="A100 3g.40gb", department="speech"),
        run("105", datetime(2026, 8, 9), 12.5, department="unmapped", division="unmapped", account="legacy"),
    ]


def make_site(folder: Path) -> Path:
    config = folder / "cardhours.toml"
    config.write_text(CONFIG)
    return config


def database(site: Path) -> Path:
    return site.parent / "wh" / "cardhours.duckdb"


def lake(site: Path) -> Path:
    return site.parent / "wh" / "cardhours.lake"


def put_usage(site: Path, month: date, rows: list[dict], skip: set[date] | None = None) -> None:
    """The month's fct_job_usage rows, every day of it landed (but ``skip``), as the daily ingest records it."""
    frame = usage(*[{**r, "month": month} for r in rows]) if rows else usage()
    with connect(database(site)) as conn:
        replace_partition(conn, "marts.fct_job_usage", frame, {"month": month})
        land_month(conn, lake(site), month, SOURCES, skip=skip)


def build(site: Path, month: date, accept_gaps: str | None = None) -> dict[str, bool]:
    """The chargeback assets after the monthly job's gate (which records the build); check results."""
    run_config = {"ops": {GATE_STEP: {"config": {"accept_gaps": accept_gaps}}}} if accept_gaps else None
    result = materialize(
        [month_landed, *CHARGEBACK_ASSETS],
        partition_key=month.isoformat(),
        run_config=run_config,
        resources={"cardhours": CardhoursResource(config_path=str(site))},
    )
    assert result.success
    return {c.check_name: c.passed for c in result.get_asset_check_evaluations()}


def rows(site: Path, sql: str, params: list | None = None) -> pl.DataFrame:
    return read(database(site), sql, params)


def close(site: Path, month: str, *extra: str) -> Result:
    return cli.invoke(app, ["close", "--config", str(site), "--month", month, *extra])
