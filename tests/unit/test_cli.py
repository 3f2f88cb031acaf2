from pathlib import Path

from typer.testing import CliRunner

from cardhours.cli import app

EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "cardhours.example.toml"
runner = CliRunner()


def test_config_check_valid_example() -> None:
    result = runner.invoke(app, ["config", "check", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "valid" in result.output and "alpha" in result.output


def test_config_check_invalid_exits_2_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace("step_seconds = 30", "step_secnds = 30"))
    result = runner.invoke(app, ["config", "check", str(bad)])
    assert result.exit_code == 2
    assert "step_secnds" in result.output


def test_config_check_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "check", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2


def test_run_rejects_bad_month_and_bad_config(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--config", str(EXAMPLE), "--month", "2026-13"])
    assert result.exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[warehouse]\npath = 3\n")
    result = runner.invoke(app, ["run", "--config", str(bad), "--month", "2026-10"])
    assert result.exit_code == 2
    assert "warehouse.path" in result.output


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("simulate", "run", "demo", "config"):
        assert command in result.output


def test_index_rewrites_the_reports_folder_index(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(EXAMPLE.read_text())  # [reports] dir = "reports", relative to the file
    result = runner.invoke(app, ["index", "--config", str(config)])
    assert result.exit_code == 1 and "no reports folder" in result.output
    month = tmp_path / "reports" / "2026-10"
    month.mkdir(parents=True)
    (month / "chargeback_jobs.csv").write_text("a,b\n")
    result = runner.invoke(app, ["index", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "index of 1 month(s) written to" in result.output
    html = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    assert 'href="2026-10/chargeback_jobs.csv"' in html
