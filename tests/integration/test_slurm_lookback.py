"""Late accounting on a real Slurm 22.05 with accounting (tests/slurm_harness): a job still
running when its day is ingested, then finished, is read again by the next day's lookback and
billed once, with its final end time.

The days are today and tomorrow (UTC): Slurm runs on the wall clock. Dagster has no partition
for a day not over yet, so the daily sacct asset is invoked directly with its partition's context
(the same body a run executes); the landed rows are then staged and billed as the monthly assets
do (``stg_slurm__jobs`` -> ``fct_job_usage``, no DCGM samples: the harness has no GPUs).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import build_asset_context

from pipelines.assets.ingest import raw_slurm_sacct
from pipelines.resources import CardhoursResource
from tests.integration.test_slurm_real import ACCOUNTS, GPU_MODELS
from tests.slurm_harness import SlurmCluster
from tests.support.warehouse_read import read_lake
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

CLUSTER = "it-slurm"  # the name fct_job_usage's account map (test_slurm_real) is keyed by
JOB_SECONDS = 20
CONFIG = """
[warehouse]
path = "cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "{cluster}"

[clusters.metrics]
source = "file"
path = "metrics"

[clusters.slurm]
sacct_command = '{sacct}'
slurm_cluster = "{slurm_cluster}"
lookback_days = 2

[[clusters.inventory.node_groups]]
hosts = "localhost"
gpu_model = "H200"
model_name = "NVIDIA H200"
gpus_per_node = 8
gpu_memory_mib = 143771

[rates]
currency = "USD"

[rates.gpu_hour]
H200 = 3.0
"""


def _site(root: Path, cluster: SlurmCluster) -> Path:
    (root / "metrics").mkdir()
    config = root / "cardhours.toml"
    text = CONFIG.format(cluster=CLUSTER, sacct=cluster.sacct_command, slurm_cluster=cluster.cluster_name)
    config.write_text(text)
    return config


def _ingest(config: Path, day: str):
    """The daily sacct asset for ``day``, as a run would execute it."""
    resource = CardhoursResource(config_path=str(config))
    with build_asset_context(partition_key=day, resources={"cardhours": resource}) as context:
        return raw_slurm_sacct(context)


def _not_across_midnight() -> None:
    """Wait past 00:00 UTC when the job would not fit in what is left of today."""
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    if (midnight - now).total_seconds() < 4 * JOB_SECONDS:
        time.sleep((midnight - now).total_seconds() + 2)


def _sacct_state(cluster: SlurmCluster, job: str) -> tuple[str, str]:
    """The job's State and End in accounting; empty until slurmdbd has the job."""
    out = cluster.sacct(["-n", "-P", "-X", "-j", job, "-o", "State,End"]).strip()
    state, _, end = out.partition("|")
    return state, end


def _wait_running_in_accounting(cluster: SlurmCluster, job: str) -> None:
    deadline = time.monotonic() + 60
    while _sacct_state(cluster, job)[0] != "RUNNING":  # slurmdbd has the start a little after slurmctld
        assert time.monotonic() < deadline, cluster.report()
        time.sleep(0.5)


def test_a_job_running_at_its_first_ingest_is_billed_once_with_its_final_end(tmp_path: Path) -> None:
    with SlurmCluster() as cluster:
        config = _site(tmp_path, cluster)
        _not_across_midnight()
        today = datetime.now(UTC).date()
        job = cluster.submit(["--gres=gpu:h200:2", "--account=vis-train", f"--wrap=sleep {JOB_SECONDS}"])
        _wait_running_in_accounting(cluster, job)

        first = _ingest(config, today.isoformat())
        assert all(check.passed for check in first.check_results), first.check_results
        landed = read_lake(config, "SELECT * FROM raw.slurm_sacct WHERE job_id_raw = ?", [job])
        assert landed.select("state", "end_time").rows() == [("RUNNING", "Unknown")]

        cluster.wait_done([job], timeout=120)
        state, end = _sacct_state(cluster, job)
        assert state == "COMPLETED"
        began = time.monotonic()
        later = _ingest(config, (today + timedelta(days=1)).isoformat())  # tomorrow's run, its lookback
        seconds = time.monotonic() - began
        earlier = {(today - timedelta(days=1)).isoformat(): "not landed", today.isoformat(): "re-landed"}
        assert later.metadata["lookback_by_cluster"].value == {CLUSTER: earlier}

    rows = read_lake(config, "SELECT * FROM raw.slurm_sacct")
    assert rows.filter(pl.col("job_id_raw") == job).select("day", "state", "end_time").rows() == [
        (today, "COMPLETED", end)
    ]
    window = (datetime.combine(today, datetime.min.time()), datetime.combine(today, datetime.min.time()) + timedelta(2))
    jobs, rejects = stg_slurm__jobs(rows, *window)
    assert rejects.is_empty(), rejects
    no_samples = pl.DataFrame(schema=ATTRIBUTED_SCHEMA)
    usage = fct_job_usage(jobs, no_samples, ACCOUNTS, GPU_MODELS, *window, step_seconds=15)
    billed = usage.filter(pl.col("job_id_raw") == job)
    final_end = datetime.fromisoformat(end)
    assert billed.select("end_time", "gpus").rows() == [(final_end, 2.0)]  # once, with its final end
    elapsed = (final_end - billed["start_time"][0]).total_seconds()
    assert JOB_SECONDS - 1 <= elapsed <= JOB_SECONDS + 2
    assert billed["gpu_hours"][0] == pytest.approx(2 * elapsed / 3600)
    assert not jobs.filter(pl.col("job_id_raw") == job)["is_open"][0]
    print(f"lookback read today again and landed the finished job in {seconds:.1f} s")
