"""The alert sensors on real failures and real landings, mailing a real SMTP server (aiosmtpd).

- A day whose simulated metrics file is corrupt fails its daily_ingest run (in a Dagster
  instance of its own); the run-failure sensor, evaluated on that run, mails the partition, the
  failed step and the first line of the reader's error.
- The freshness sensor mails a source whose newest landing is older than freshness_hours,
  once per episode, and a source that never landed only once it has watched that long.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, build_run_status_sensor_context, build_sensor_context
from typer.testing import CliRunner

from cardhours.cli import app
from config import load_config
from pipelines.alerts import ingest_freshness, run_failure_alert
from pipelines.definitions import build_definitions
from pipelines.landing import utc_now
from pipelines.resources import CardhoursResource
from pipelines.store import open_lake
from tests.support.smtp import SmtpServer
from warehouse.landings import Landing, write_landing

pytestmark = pytest.mark.integration

BROKEN_DAY = "2026-10-02"


def _site(root: Path, smtp_port: int, freshness_hours: int = 36) -> Path:
    argv = ["simulate", "--out", str(root), "--gpus", "8", "--days", "2", "--start", "2026-10-01", "--seed", "5"]
    done = CliRunner().invoke(app, [*argv, "--step", "300", "--metrics-format", "parquet"])
    assert done.exit_code == 0, done.output
    config = root / "cardhours.toml"
    with config.open("a") as out:
        out.write(
            f'\n[smtp]\nhost = "127.0.0.1"\nport = {smtp_port}\nsecurity = "none"\n'
            'from_address = "cardhours@example.org"\n\n'
            f'[alerts]\nrecipients = ["ops@example.org"]\nfreshness_hours = {freshness_hours}\n'
            'ui_url = "http://dagster.example.org/"\n'
        )
    return config


def test_a_failed_day_is_mailed_with_its_step_and_error(tmp_path: Path) -> None:
    with SmtpServer(tmp_path / "smtp") as server:
        config = _site(tmp_path / "sim", server.port)
        (broken,) = (tmp_path / "sim" / "metrics" / f"day={BROKEN_DAY}").glob("*.parquet")
        broken.write_bytes(b"not a parquet file")
        resource = CardhoursResource(config_path=str(config))
        job = build_definitions(str(config)).resolve_job_def("daily_ingest")
        with DagsterInstance.ephemeral() as instance:
            result = job.execute_in_process(partition_key=BROKEN_DAY, instance=instance, raise_on_error=False)
            assert not result.success
            (failure,) = [e for e in result.all_events if e.event_type == DagsterEventType.RUN_FAILURE]
            with build_run_status_sensor_context(
                sensor_name="cardhours_run_failure_alert",
                dagster_event=failure,
                dagster_instance=instance,
                dagster_run=result.dagster_run,
                resources={"cardhours": resource},
            ) as context:
                run_failure_alert(context.for_run_failure())
        (message,) = server.wait_for(1, 10)
    subject, body = message["Subject"], message.get_content()
    assert subject.startswith(f"[cardhours] FAILED daily_ingest {BROKEN_DAY}: raw__dcgm_samples")
    assert f"Partition: {BROKEN_DAY}" in body
    assert "raw__dcgm_samples:" in body and str(broken.name) in body
    assert f"http://dagster.example.org/runs/{result.run_id}" in body
    assert message["To"] == "ops@example.org"


def _landing(cluster: str, source: str, hours_ago: float) -> Landing:
    when = utc_now() - timedelta(hours=hours_ago)
    return Landing(cluster=cluster, day=when.date(), source=source, landed_at=when, rows=1)


def test_a_stale_source_is_mailed_once_per_episode(tmp_path: Path) -> None:
    with SmtpServer(tmp_path / "smtp") as server:
        config_path = _site(tmp_path / "sim", server.port, freshness_hours=2)
        config = load_config(config_path)
        (cluster,) = config.cluster_names
        conn = open_lake(config)
        write_landing(conn, config.warehouse.lake, _landing(cluster, "dcgm", hours_ago=3))  # sacct never landed
        resources = {"cardhours": CardhoursResource(config_path=str(config_path))}

        with build_sensor_context(resources=resources) as first:
            assert "alerted: " in ingest_freshness(first).skip_message
        (message,) = server.wait_for(1, 10)
        assert "dcgm: last landed" in message.get_content() and "sacct" not in message.get_content()

        with build_sensor_context(cursor=first.cursor, resources=resources) as again:
            assert "already alerted" in ingest_freshness(again).skip_message

        watched = json.loads(first.cursor) | {"since": (utc_now() - timedelta(hours=3)).isoformat()}
        with build_sensor_context(cursor=json.dumps(watched), resources=resources) as later:
            assert ingest_freshness(later).skip_message.endswith(f"alerted: {cluster}/sacct")
        assert "sacct: never landed" in server.wait_for(2, 10)[1].get_content()

        write_landing(conn, config.warehouse.lake, _landing(cluster, "dcgm", hours_ago=0))
        write_landing(conn, config.warehouse.lake, _landing(cluster, "sacct", hours_ago=0))
        conn.close()
        with build_sensor_context(cursor=later.cursor, resources=resources) as fresh:
            assert ingest_freshness(fresh).skip_message == "every cluster's sources landed within 2 h"
        assert json.loads(fresh.cursor)["told"] == {}
    assert len(server.messages) == 2
