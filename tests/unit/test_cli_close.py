"""`cardhours close` and `cardhours ledger verify`: arguments and config errors (the closing itself:
tests/warehouse/test_chargeback_ledger.py, test_close_conditions.py, test_ledger_chain.py)."""

from pathlib import Path

from typer.testing import CliRunner

from cardhours.cli import app

EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "cardhours.example.toml"
runner = CliRunner()


def test_close_is_listed_and_documented() -> None:
    result = runner.invoke(app, ["close", "--help"])
    assert result.exit_code == 0 and "--month" in result.output and "Correction" in result.output
    assert "--accept-gaps" in result.output and "75" in result.output
    assert "close" in runner.invoke(app, ["--help"]).output
    verify = runner.invoke(app, ["ledger", "verify", "--help"])
    assert verify.exit_code == 0 and "first row that differs" in " ".join(verify.output.split())


def test_close_rejects_a_bad_month_and_a_bad_config(tmp_path: Path) -> None:
    assert runner.invoke(app, ["close", "--config", str(EXAMPLE), "--month", "2026-1"]).exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text(
        EXAMPLE.read_text()
        .replace('idle_capacity = "none"', "")
        .replace("[rates]\n", '[rates]\nidle_capacity = "half"\n')
    )
    result = runner.invoke(app, ["close", "--config", str(bad), "--month", "2026-10"])
    assert result.exit_code == 2 and "rates.idle_capacity" in result.output


def test_close_without_a_warehouse_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text(EXAMPLE.read_text())
    result = runner.invoke(app, ["close", "--config", str(config), "--month", "2026-10"])
    assert result.exit_code == 1 and "no warehouse" in result.output
    verify = runner.invoke(app, ["ledger", "verify", "--config", str(config)])
    assert verify.exit_code == 1 and "not verified: no warehouse at " in verify.output
    assert not any(tmp_path.rglob("*.duckdb")) and not any(tmp_path.rglob("*.lock"))  # nothing created


def test_accept_gaps_needs_a_reason(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text(EXAMPLE.read_text())
    result = runner.invoke(app, ["close", "--config", str(config), "--month", "2026-10", "--accept-gaps", "  "])
    assert result.exit_code == 2 and "needs a reason, e.g. --accept-gaps" in " ".join(result.output.split())
