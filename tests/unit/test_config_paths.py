"""config: paths resolve against the config file's directory (relative, absolute, home)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import load_config, parse_config
from tests.unit.config_cases import FIXTURES, PROM, example, put


def test_relative_paths_resolve_against_the_config_directory() -> None:
    config = load_config(FIXTURES / "minimal.toml")
    cluster = config.cluster("sim")
    assert config.warehouse.path == FIXTURES / "cardhours.duckdb"
    assert config.reports.dir == FIXTURES / "../out/reports"
    assert cluster.metrics.path == FIXTURES / "metrics"
    assert cluster.slurm is not None and cluster.slurm.sacct_file == FIXTURES / "sacct.txt"


def test_relative_config_path_gives_absolute_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    config = load_config("config/minimal.toml")
    assert config.warehouse.path.is_absolute()
    assert config.warehouse.path == FIXTURES / "cardhours.duckdb"


def test_ca_bundle_and_absolute_and_home_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = parse_config(
        example(
            put(f"{PROM}.ca_bundle", "certs/ca.pem"),
            put("warehouse.path", "/var/lib/cardhours/wh.duckdb"),
            put("reports.dir", "~/reports"),
        ),
        base_dir=tmp_path,
    )
    prometheus = config.cluster("alpha").prometheus
    assert prometheus is not None and prometheus.ca_bundle == tmp_path / "certs/ca.pem"
    assert config.warehouse.path == Path("/var/lib/cardhours/wh.duckdb")
    assert config.reports.dir == tmp_path / "home" / "reports"


def test_templates_dir_resolves_against_the_config_directory(tmp_path: Path) -> None:
    (tmp_path / "site-templates").mkdir()
    config = parse_config(example(put("reports.templates_dir", "site-templates")), base_dir=tmp_path)
    assert config.reports.templates_dir == tmp_path / "site-templates"
    assert parse_config(example(), base_dir=tmp_path).reports.templates_dir is None


def test_parse_config_without_base_dir_keeps_relative_paths() -> None:
    assert parse_config(example()).warehouse.path == Path("cardhours.duckdb")
