"""An injected failure, alerted by the service itself: a real ``dagster-daemon`` and
``dagster-webserver`` on PostgreSQL run the cardhours code location, whose failure sensor is on
by default; the day launched through the webserver has a corrupt metrics file. The daemon's
sensor must mail a real SMTP server (aiosmtpd) with the partition, the step and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_alert_sensors import BROKEN_DAY, _site
from tests.support.dagster_service import TERMINAL, DagsterService
from tests.support.postgres import PostgresServer
from tests.support.smtp import SmtpServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_daemon_mails_a_failed_day(tmp_path: Path) -> None:
    with SmtpServer(tmp_path / "smtp") as smtp, PostgresServer() as postgres:
        config = _site(tmp_path / "sim", smtp.port)
        (broken,) = (tmp_path / "sim" / "metrics" / f"day={BROKEN_DAY}").glob("*.parquet")
        broken.write_bytes(b"not a parquet file")
        env = {**postgres.env, "CARDHOURS_CONFIG": str(config)}
        with DagsterService(tmp_path / "dagster_home", env) as service:
            backfill = service.launch_backfill("daily_ingest", [BROKEN_DAY])

            def failed() -> bool:
                runs = service.runs("dagster/backfill", backfill)
                return len(runs) == 1 and runs[0]["status"] in TERMINAL

            service.wait("the broken day's run ends", failed, timeout=600)
            (run,) = service.runs("dagster/backfill", backfill)
            assert run["status"] == "FAILURE", service.report()
            try:
                (message,) = smtp.wait_for(1, 240)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{service.report()}") from None
    assert message["Subject"].startswith(f"[cardhours] FAILED daily_ingest {BROKEN_DAY}: raw__dcgm_samples: ")
    body = message.get_content()
    assert run["runId"] in body and broken.name in body and "replace or remove that file" in body
