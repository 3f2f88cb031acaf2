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
