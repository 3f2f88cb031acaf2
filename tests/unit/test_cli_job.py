"""``cardhours job`` on a small warehouse written by hand (the schema from the migrations): which
ids find which runs, an id in two clusters, an unknown id or cluster, a bad month."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from warehouse import connect
from warehouse.books.job_reads import find_runs

EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "cardhours.example.toml"
MONTH = date(2026, 10, 1)
runner = CliRunner()


def _row(cluster: str, job_id: str, **fields) -> dict:
    row = dict.fromkeys(USAGE_SCHEMA)
    row.update(cluster=cluster, scheduler="slurm", job_id=job_id, job_id_raw=job_id, month=MONTH, gpus=1.0)
    row.update(start_time=datetime(2026, 10, 2), end_time=datetime(2026, 10, 2, 1), elapsed_seconds=3600)
    row.update(gpu_hours=1.0, state="COMPLETED", hosts="h1", **fields)
    return row


ROWS = [
    _row("alpha", "42"),
    _row("beta", "42"),
    _row("alpha", "7_1", job_id_raw="8", array_job_id="7", array_task_id="1"),
    _row("alpha", "7_2", job_id_raw="9", array_job_id="7", array_task_id="2"),
    _row("alpha", "ml/PodGroup/vc-1", scheduler="kubernetes", job_name="vc-1", account="ml"),
    _row("alpha", "ml/PyTorchJob/pt-1", scheduler="kubernetes", job_name="pt-1", account="ml"),
]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(EXAMPLE.read_text().replace('path = "cardhours.duckdb"', f'path = "{tmp_path / "w.duckdb"}"', 1))
    with connect(tmp_path / "w.duckdb") as conn:
        frame = pl.DataFrame(ROWS, schema=USAGE_SCHEMA)  # noqa: F841 (read by the SQL below)
        conn.execute("INSERT INTO marts.fct_job_usage BY NAME SELECT * FROM frame")
    return path


def test_ids_find_their_runs(config: Path) -> None:
    with connect(config.with_name("w.duckdb"), read_only=True) as conn:
        found = {
            q: find_runs(conn, q, "alpha", None)["job_id"].to_list()
            for q in ("7", "8", "7_2", "vc-1", "ml/vc-1", "pytorchjob-pt-1-3f9c2")
        }
        assert found == {"7": ["7_1", "7_2"], "8": ["7_1"], "7_2": ["7_2"], "vc-1": ["ml/PodGroup/vc-1"],
                         "ml/vc-1": ["ml/PodGroup/vc-1"], "pytorchjob-pt-1-3f9c2": ["ml/PyTorchJob/pt-1"]}  # fmt: skip
        assert find_runs(conn, "42", None, date(2026, 11, 1)).is_empty()


def test_an_id_in_two_clusters_asks_for_one(config: Path) -> None:
    result = runner.invoke(app, ["job", "42", "--config", str(config)])
    assert result.exit_code == 1
    assert "job 42 is in clusters alpha, beta: add --cluster" in " ".join(result.output.split())
    result = runner.invoke(app, ["job", "42", "--config", str(config), "--cluster", "alpha", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["cluster"], report["kind"], report["totals"]["gpu_hours"]) == ("alpha", "Slurm job", 1.0)
    assert report["totals"]["cost"] is None and report["flags"] == [] and report["gpus"] == []


def test_unknown_ids_clusters_and_months(config: Path) -> None:
    result = runner.invoke(app, ["job", "43", "--config", str(config), "--month", "2026-10"])
    assert result.exit_code == 1
    assert "no job '43' in cluster(s) alpha, beta, month(s) 2026-10" in " ".join(result.output.split())
    result = runner.invoke(app, ["job", "42", "--config", str(config), "--cluster", "gamma"])
    assert result.exit_code == 1 and "'gamma' is not in" in result.output
    assert runner.invoke(app, ["job", "42", "--config", str(config), "--month", "2026-13"]).exit_code == 2
