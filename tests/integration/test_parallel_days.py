"""Two day partitions at once through ``dagster job execute`` on Dagster's default (multiprocess)
executor, with the repository's dagster.yaml; and a reader that answers while a day is landing."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

import duckdb
import pytest

from config import load_config
from pipelines.tables import RAW_DCGM_SAMPLES, RAW_SLURM_SACCT, STG_DCGM__GPU_MINUTELY
from simulate.run import simulate
from tests.support.dagster_cli import execute_partition, instance_home
from warehouse.lake import partitions, table_glob
from warehouse.landings import LANDINGS
from warehouse.lock import hold_warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DAYS = ("2026-10-01", "2026-10-02")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("parallel")
    sim = simulate(root, gpus=16, days=3, start=date(2026, 10, 1), seed=5, step_seconds=300, metrics_format="parquet")
    return sim.config_path, instance_home(root)


def test_two_days_run_at_once_and_both_land(site: tuple[Path, Path]) -> None:
    config, home = site
    settings = load_config(config)
    # The DuckDB file is held by a writer the whole time (as the monthly job or a close would):
    # the daily runs never open it.
    with hold_warehouse(settings.warehouse.path, "a test holding the warehouse"):
        runs = [execute_partition(config, home, day) for day in DAYS]
        outputs = [run.communicate(timeout=600)[0] for run in runs]
    for day, run, output in zip(DAYS, runs, outputs, strict=True):
        assert run.returncode == 0, f"{day}:\n{output[-3000:]}"
        assert "RUN_SUCCESS" in output
    assert "Multiprocess" in outputs[0] or "multiprocess" in outputs[0]
    lake = settings.warehouse.lake
    expected = [{"cluster": "sim", "day": day} for day in DAYS]
    for table in (RAW_DCGM_SAMPLES, RAW_SLURM_SACCT, STG_DCGM__GPU_MINUTELY):
        assert partitions(lake, table.lake_table) == expected, table.name
    landed = duckdb.sql(
        f"SELECT source, day, status FROM read_parquet('{table_glob(lake, LANDINGS)}', hive_partitioning = true) "
        "ORDER BY ALL"
    ).fetchall()
    assert [(source, str(day), status) for source, day, status in landed] == [
        ("dcgm", "2026-10-01", "ok"),
        ("dcgm", "2026-10-02", "ok"),
        ("sacct", "2026-10-01", "ok"),
        ("sacct", "2026-10-02", "ok"),
    ]
    assert not settings.warehouse.path.exists()  # the daily runs never created the DuckDB file


def test_a_reader_answers_while_a_day_is_landing(site: tuple[Path, Path]) -> None:
    """A BI-style read-only query of the lake, repeated while the third day lands: each answers,
    in well under a second, with the landed days' exact rows."""
    config, home = site
    lake = load_config(config).warehouse.lake
    query = (
        f"SELECT day, count(*) FROM read_parquet('{table_glob(lake, RAW_DCGM_SAMPLES.lake_table)}', "
        "hive_partitioning = true) WHERE day < DATE '2026-10-03' GROUP BY day ORDER BY day"
    )
    reader = duckdb.connect()  # reads the Parquet files only; nothing it could lock
    before = reader.sql(query).fetchall()
    assert len(before) == 2
    third = {"cluster": "sim", "day": "2026-10-03"}
    run = execute_partition(config, home, third["day"])
    answers, while_writing, slowest = 0, 0, 0.0
    while run.poll() is None:
        landing = third in partitions(lake, RAW_DCGM_SAMPLES.lake_table)  # its rollups are being written
        started = time.perf_counter()
        assert reader.sql(query).fetchall() == before
        slowest = max(slowest, time.perf_counter() - started)
        answers += 1
        while_writing += landing and run.poll() is None
        time.sleep(0.05)
    output = run.communicate()[0]
    assert run.returncode == 0, output[-3000:]
    assert answers > 10 and while_writing > 0 and slowest < 1.0, (answers, while_writing, slowest)
    assert partitions(lake, RAW_DCGM_SAMPLES.lake_table)[-1] == {"cluster": "sim", "day": "2026-10-03"}
