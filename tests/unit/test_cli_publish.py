"""``cardhours publish`` and ``config check`` on ``[publish]`` problems found before any row
moves: no section, no warehouse, an unknown mart, the password variable unset, nothing listening."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from config import EXAMPLE_CONFIG
from tests.slurm_harness.procs import free_port
from warehouse import connect
from warehouse.landings import finish_build

runner = CliRunner()
VARIABLE = "CARDHOURS_PUBLISH_PASSWORD"  # the example config's password_env


def _with_publish() -> str:
    """The example config with its commented [publish] section switched on (``marts`` left a comment)."""
    head, section = EXAMPLE_CONFIG.read_text().split("\n# [publish]\n", 1)
    body, rest = section.split("\n\n", 1) if "\n\n" in section else (section, "")
    lines = [line if line.startswith("# marts") else line.removeprefix("# ") for line in body.split("\n")]
    return "\n".join([head, "[publish]", *lines]) + "\n\n" + rest


def _config(tmp_path: Path, **replace: str) -> Path:
    text = _with_publish()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "cardhours.toml"
    path.write_text(text)
    return path


def _publish(config: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["publish", "--config", str(config), "--month", "2026-10"])
    return result.exit_code, " ".join(result.output.split())


def test_config_check_names_an_unknown_mart(tmp_path: Path) -> None:
    config = _config(tmp_path, **{'# marts = ["fct_job_usage", ': 'marts = ["fct_job_usag", '})
    result = runner.invoke(app, ["config", "check", str(config)])
    assert result.exit_code == 2
    assert "[publish] marts: unknown mart 'fct_job_usag'; did you mean 'fct_job_usage'?" in " ".join(
        result.output.split()
    )


def test_publish_without_a_section_or_a_warehouse_says_what_to_do(tmp_path: Path) -> None:
    bare = tmp_path / "bare.toml"
    bare.write_text(EXAMPLE_CONFIG.read_text())  # [publish] is commented out there
    code, text = _publish(bare)
    assert code == 1 and "has no [publish] section: add one (docs/publish.md)" in text
    code, text = _publish(_config(tmp_path))
    assert code == 1 and "no warehouse at" in text and "run the month first" in text


def test_publish_names_the_unset_password_variable_then_the_server_it_cannot_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()  # nothing listens there
    config = _config(
        tmp_path,
        **{
            'host = "analytics-db.example.org"': 'host = "127.0.0.1"',
            "port = 5432": f"port = {port}",
            'sslmode = "verify-full"': 'sslmode = "disable"',
        },
    )
    connect(tmp_path / "cardhours.duckdb").close()  # the example's warehouse, migrated and empty
    monkeypatch.delenv(VARIABLE, raising=False)
    code, text = _publish(config)
    assert code == 1 and "2026-10 has not been built: run cardhours run --month 2026-10 first" in text
    with connect(tmp_path / "cardhours.duckdb") as duck:
        finish_build(duck, date(2026, 10, 1), datetime(2026, 11, 1, 3))
    code, text = _publish(config)
    assert code == 1 and f"[publish] password_env names {VARIABLE}, which is not set in this environment" in text
    monkeypatch.setenv(VARIABLE, "secret")
    code, text = _publish(config)
    assert code == 1 and f"cannot connect to postgresql://cardhours@127.0.0.1:{port}/analytics" in text
    assert "check [publish] host, port, database and sslmode" in text and "secret" not in text
