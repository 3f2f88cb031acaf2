"""The Dagster UI operations use: the webserver on loopback lists our asset keys over GraphQL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.dagster_web import graphql, wait_until_up

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPECTED_KEYS = {
    ("raw", "dcgm_samples"),
    ("raw", "slurm_sacct"),
    ("staging", "stg_dcgm__gpu_hourly"),
    ("staging", "stg_dcgm__gpu_minutely"),
    ("staging", "stg_dcgm__field_presence"),
    ("staging", "stg_slurm__jobs"),
    ("marts", "fct_job_usage"),
    ("marts", "fct_gpu_hourly"),
    ("marts", "mart_department_monthly"),
    ("marts", "mart_cluster_monthly"),
    ("reports", "review_html"),
}
EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "cardhours.example.toml"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    return {**os.environ, "DAGSTER_HOME": str(home), "CARDHOURS_CONFIG": str(EXAMPLE)}


def test_webserver_lists_asset_keys(tmp_path: Path) -> None:
    port = _free_port()
    webserver = Path(sys.executable).with_name("dagster-webserver")
    log = (tmp_path / "webserver.log").open("w")
    process = subprocess.Popen(
        [str(webserver), "-h", "127.0.0.1", "-p", str(port), "-m", "pipelines.definitions"],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until_up(port, process)
        deadline = time.monotonic() + 60
        while True:  # the code location loads in the background after the server answers
            data = graphql(port, "{ assetNodes { assetKey { path } } }")
            nodes = (data.get("data") or {}).get("assetNodes") or []
            if nodes or time.monotonic() > deadline:
                break
            time.sleep(1)
        keys = {tuple(node["assetKey"]["path"]) for node in nodes}
        assert EXPECTED_KEYS <= keys, (keys, (tmp_path / "webserver.log").read_text()[-3000:])
        jobs = graphql(port, "{ repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } } }")
        names = {job["name"] for repo in jobs["data"]["repositoriesOrError"]["nodes"] for job in repo["jobs"]}
        assert {"daily_ingest", "monthly_review"} <= names
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_definitions_validate(tmp_path: Path) -> None:
    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "pipelines.definitions"],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
