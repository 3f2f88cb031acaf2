"""``cardhours notify-users`` refusals, before anything is read or sent: no section, not enabled,
a bad address file (named by file and line), no warehouse."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.cli import app

EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "cardhours.example.toml"
runner = CliRunner()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    config = tmp_path / "cardhours.toml"
    config.write_text(EXAMPLE.read_text())
    (tmp_path / "user-emails.csv").write_text("user,email\nbob,bob@lab.example\n")
    return config


def _notify(config: Path, *args: str):
    return runner.invoke(app, ["notify-users", "--month", "2026-10", "--config", str(config), *args])


def test_no_section(site: Path) -> None:
    site.write_text(site.read_text().split("\n[notices]\n")[0])
    result = _notify(site, "--dry-run", str(site.parent / "out"))
    assert result.exit_code == 2 and "has no [notices] section" in result.output


def test_sending_needs_enabled(site: Path) -> None:
    result = _notify(site)
    assert result.exit_code == 2 and "[notices] enabled is false" in result.output
    assert "--dry-run DIR" in result.output


def test_a_bad_address_line_stops_before_the_warehouse(site: Path) -> None:
    (site.parent / "user-emails.csv").write_text("user,email\nbob,bob at lab\n")
    result = _notify(site, "--dry-run", str(site.parent / "out"))
    assert result.exit_code == 2
    assert f"{site.parent / 'user-emails.csv'}:2: user 'bob'" in result.output.replace("\n", "")
    assert not (site.parent / "out").exists()


def test_a_dry_run_without_a_warehouse(site: Path) -> None:
    result = _notify(site, "--dry-run", str(site.parent / "out"))
    assert result.exit_code == 1 and "no warehouse at" in result.output and "run the month first" in result.output
