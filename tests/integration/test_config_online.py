"""``cardhours config check --online`` against real servers: Prometheus started with a time or a
size retention, VictoriaMetrics with its own period, and a server that is not there."""

from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.bench.prometheus_server import PrometheusServer, free_port
from cardhours.cli import app
from config import load_config
from pipelines.store import open_lake
from simulate.run import simulate
from tests.support.victoria import VictoriaServer
from warehouse.landings import Landing, write_landing

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("online")
    return simulate(root, gpus=8, days=1, start=date(2026, 9, 1), seed=2, step_seconds=600).config_path


def _pointed_at(config: Path, url: str, name: str) -> Path:
    text = re.sub(
        r"\[clusters\.metrics\]\n(?:[^\[\n][^\n]*\n)*",
        f'[clusters.metrics]\nsource = "prometheus"\n\n[clusters.prometheus]\nurl = "{url}"\n\n',
        config.read_text(),
    )
    path = config.with_name(name)
    path.write_text(text)
    return path


def _check(config: Path) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["config", "check", str(config), "--online"], terminal_width=400)
    return done.exit_code, " ".join(done.output.split())


def _prometheus(tmp_path: Path, *flags: str) -> PrometheusServer:
    (tmp_path / "data").mkdir()
    return PrometheusServer(tmp_path / "data", tmp_path, extra_args=list(flags))


def test_a_short_retention_warns_about_the_month_to_build(site: Path, tmp_path: Path) -> None:
    with _prometheus(tmp_path, "--storage.tsdb.retention.time=20d") as server:
        code, text = _check(_pointed_at(site, server.url, "short.toml"))
    month = datetime.now().replace(day=1).date().toordinal() - 1
    previous = date.fromordinal(month).strftime("%Y-%m")
    assert code == 0, text
    assert "keeps 20d (/api/v1/status/runtimeinfo)" in text
    assert (
        f"warning: cluster 'sim': {previous} (nothing open has landed: the next month to build) starts before" in text
    )
    assert "do not --reingest them, or raise the server's retention above" in text


def test_a_landed_open_month_is_the_one_to_cover(site: Path, tmp_path: Path) -> None:
    config_path = _pointed_at(site, "http://127.0.0.1:1", "landed.toml")
    config = load_config(config_path)
    conn = open_lake(config)
    write_landing(conn, config.warehouse.lake, Landing("sim", date(2026, 9, 1), "dcgm", datetime(2026, 9, 2), rows=5))
    conn.close()
    with _prometheus(tmp_path, "--storage.tsdb.retention.time=10y") as server:
        code, text = _check(_pointed_at(site, server.url, "landed.toml"))
    assert code == 0, text
    assert "keeps 10y" in text and "cover 2026-09 (the oldest landed month not closed)" in text
    assert "warning" not in text


def test_a_size_only_retention_has_no_time_limit(site: Path, tmp_path: Path) -> None:
    with _prometheus(tmp_path, "--storage.tsdb.retention.size=1GB") as server:
        code, text = _check(_pointed_at(site, server.url, "size.toml"))
    assert code == 0, text
    assert "keeps 1GiB" in text and "no time limit stated, only size" in text


def test_victoria_metrics_states_its_period_in_flags(site: Path, tmp_path: Path) -> None:
    with VictoriaServer(tmp_path, ["-retentionPeriod=45d"]) as server:
        code, text = _check(_pointed_at(site, server.url, "victoria.toml"))
    assert code == 0, text
    assert "keeps 45d (/flags)" in text


def test_a_server_that_does_not_answer_fails_the_check(site: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, text = _check(_pointed_at(site, url, "down.toml"))
    assert code == 1
    assert "error: cluster 'sim': retention unknown:" in text and url.removeprefix("http://") in text
