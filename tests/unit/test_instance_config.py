"""The Dagster instance configs: deploy/dagster.yaml (PostgreSQL, for a service) reads its
connection from the environment and validates; both it and the quick-start dagster.yaml allow
one run at a time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance
from dagster._config import process_config
from dagster._core.errors import DagsterInvalidConfigError
from dagster._core.instance.config import dagster_instance_config
from dagster._core.instance.ref import InstanceRef
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import pg_url_from_config
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = REPO / "deploy" / "dagster.yaml"
QUICK_START = REPO / "dagster.yaml"
PG_ENV = {
    "DAGSTER_PG_HOST": "db.example.org",
    "DAGSTER_PG_PORT": "6543",
    "DAGSTER_PG_USERNAME": "cardhours",
    "DAGSTER_PG_PASSWORD": "s3cr@t/word",
    "DAGSTER_PG_DB": "dagster_prod",
}


def _home(tmp_path: Path, source: Path) -> Path:
    shutil.copy(source, tmp_path / "dagster.yaml")
    return tmp_path


def _postgres_settings() -> dict:
    return yaml.safe_load(PRODUCTION.read_text())["storage"]["postgres"]


def test_production_instance_validates(tmp_path: Path) -> None:
    settings, instance_class = dagster_instance_config(str(_home(tmp_path, PRODUCTION)))
    assert instance_class is None
    assert set(settings["storage"]) == {"postgres"}  # runs, event logs and schedules all in PostgreSQL


def test_connection_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PG_ENV.items():
        monkeypatch.setenv(name, value)
    resolved = process_config(DagsterPostgresStorage.config_type(), _postgres_settings())
    assert resolved.success, resolved.errors
    url = make_url(pg_url_from_config(resolved.value))  # what dagster-postgres hands SQLAlchemy
    assert (url.drivername, url.host, url.port, url.username, url.password, url.database) == (
        "postgresql+psycopg2",
        "db.example.org",
        6543,
        "cardhours",
        "s3cr@t/word",
        "dagster_prod",
    )


def test_every_connection_setting_is_an_environment_variable() -> None:
    database = _postgres_settings()["postgres_db"]
    from_env = {key: value["env"] for key, value in database.items() if isinstance(value, dict)}
    assert from_env == {
        "hostname": "DAGSTER_PG_HOST",
        "port": "DAGSTER_PG_PORT",
        "username": "DAGSTER_PG_USERNAME",
        "password": "DAGSTER_PG_PASSWORD",
        "db_name": "DAGSTER_PG_DB",
    }


def test_a_missing_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PG_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DAGSTER_PG_PASSWORD")
    resolved = process_config(DagsterPostgresStorage.config_type(), _postgres_settings())
    assert not resolved.success
    assert "DAGSTER_PG_PASSWORD" in str(resolved.errors)


def test_both_instances_share_the_concurrency_settings() -> None:
    production = yaml.safe_load(PRODUCTION.read_text())["concurrency"]
    quick_start = yaml.safe_load(QUICK_START.read_text())["concurrency"]
    writer = {"key": "cardhours/warehouse", "value": "writer", "limit": 1}
    assert (
        production
        == quick_start
        == {
            "runs": {"max_concurrent_runs": 4, "tag_concurrency_limits": [writer]},
            "pools": {"default_limit": 1},
        }
    )


def test_quick_start_instance_queues_one_warehouse_writer_at_a_time(tmp_path: Path) -> None:
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(_home(tmp_path, QUICK_START)))) as instance:
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)  # the limits apply to its queue
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config.max_concurrent_runs == 4
        limits = concurrency.run_queue_config.tag_concurrency_limits
        assert limits == [{"key": "cardhours/warehouse", "value": "writer", "limit": 1}]
        assert concurrency.pool_config.default_pool_limit == 1


def test_a_misspelt_key_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text(PRODUCTION.read_text().replace("max_concurrent_runs", "max_runs"))
    with pytest.raises(DagsterInvalidConfigError, match="max_runs"):
        dagster_instance_config(str(tmp_path))
