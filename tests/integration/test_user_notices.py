"""``cardhours notify-users`` on a built month of a simulated site, through a real SMTP server
(aiosmtpd on loopback): a dry run writes the messages and sends nothing; the real run mails each
user with enough waste at the right address and records it in meta.user_notices, an opted-out
user gets nothing, and a second run within [notices] period_days sends nothing."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from email import message_from_bytes, policy
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetKey, DagsterInstance

from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.run import simulate
from tests.support.smtp import SmtpServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CARDHOURS = str(Path(sys.executable).with_name("cardhours"))
T0, DAYS, MONTH = date(2026, 3, 2), 2, "2026-03"
MIN_WASTE = 1.0


@pytest.fixture(scope="module")
def smtp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmtpServer]:
    with SmtpServer(tmp_path_factory.mktemp("smtp")) as server:
        yield server


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, smtp: SmtpServer) -> dict:
    """The simulated days landed and the month built through Dagster, and a config with [smtp]
    and [notices]: the most wasteful user opted out, the next one mapped by the addresses file."""
    sim = simulate(tmp_path_factory.mktemp("noticesite"), gpus=8, days=DAYS, start=T0, seed=11, step_seconds=120)
    definitions = build_definitions(str(sim.config_path))
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            job = definitions.resolve_job_def("daily_ingest")
            assert job.execute_in_process(partition_key=(T0 + timedelta(days=i)).isoformat(), instance=instance).success
        gate = {"ops": {GATE_STEP: {"config": {"accept_gaps": f"the site serves {DAYS} days of March"}}}}
        monthly = definitions.resolve_job_def("monthly_review")
        assert monthly.execute_in_process(partition_key="2026-03-01", instance=instance, run_config=gate).success
    with duckdb.connect(str(sim.config_path.with_name("cardhours.duckdb")), read_only=True) as conn:
        flags = conn.sql("SELECT * FROM marts.fct_job_flags").pl()
    waste = (
        flags.group_by("cluster", "job_id_raw", "start_time", "user_name")
        .agg(pl.col("wasted_gpu_hours").max())
        .group_by("user_name")
        .agg(pl.col("wasted_gpu_hours").sum())
        .sort("wasted_gpu_hours", descending=True)
    )
    users = waste.filter(pl.col("wasted_gpu_hours") >= MIN_WASTE)["user_name"].to_list()
    assert len(users) >= 3, f"the simulated month has too few wasteful users: {waste}"
    opted_out, mapped = users[0], users[1]
    (sim.config_path.parent / "emails.csv").write_text(f"user,email\n{mapped},{mapped}.mapped@lab.example\n")
    config = sim.config_path.with_name("notices.toml")
    config.write_text(
        sim.config_path.read_text()
        + f"""
[smtp]
host = "127.0.0.1"
port = {smtp.port}
security = "none"
from_address = "cardhours@example.org"

[notices]
enabled = true
addresses_file = "emails.csv"
domain = "{{user}}@uni.example"
period_days = 30
opt_out = ["{opted_out}"]
min_wasted_gpu_hours = {MIN_WASTE}
max_jobs = 3
contact = "gpu-help@example.org"
"""
    )
    expected = {u: f"{u}.mapped@lab.example" if u == mapped else f"{u}@uni.example" for u in users[1:]}
    below = set(waste.filter(pl.col("wasted_gpu_hours") < MIN_WASTE)["user_name"].drop_nulls())
    return {"config": config, "flags": flags, "expected": expected, "opted_out": opted_out, "below": below}


def _notify(site: dict, *args: str) -> subprocess.CompletedProcess:
    command = [CARDHOURS, "notify-users", "--month", MONTH, "--config", str(site["config"]), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _ledger(site: dict) -> pl.DataFrame:
    with duckdb.connect(str(site["config"].with_name("cardhours.duckdb")), read_only=True) as conn:
        tables = conn.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'meta'").fetchall()
        if ("user_notices",) not in tables:
            return pl.DataFrame()
        return conn.sql("SELECT * FROM meta.user_notices ORDER BY user_name").pl()


def test_1_a_dry_run_writes_the_messages_and_sends_nothing(site: dict, smtp: SmtpServer, tmp_path: Path) -> None:
    done = _notify(site, "--dry-run", str(tmp_path / "review"))
    assert f"message(s) written to {tmp_path / 'review'}" in done.stdout and "nothing sent" in done.stdout
    with open(tmp_path / "review" / "summary.csv", newline="") as handle:
        summary = {row["user"]: row for row in csv.DictReader(handle)}
    told = {user: row["address"] for user, row in summary.items() if row["outcome"] == "notice"}
    assert told == site["expected"]
    assert summary[site["opted_out"]]["skip"] == "opted_out"
    assert {u for u, row in summary.items() if row["skip"] == "below_threshold"} == site["below"]
    for user, address in told.items():
        message = message_from_bytes((tmp_path / "review" / summary[user]["file"]).read_bytes(), policy=policy.default)
        assert message["To"] == address and message["Subject"].startswith("[cardhours] Your GPU jobs in March 2026")
    assert smtp.messages == [] and _ledger(site).is_empty()


def test_2_notices_arrive_at_the_right_users(site: dict, smtp: SmtpServer) -> None:
    done = _notify(site)
    messages = smtp.wait_for(len(site["expected"]), 30)
    assert f"{len(site['expected'])} notice(s) sent for {MONTH}" in done.stdout
    assert sorted(rcpt for _, (rcpt,) in smtp.inbox.envelopes) == sorted(site["expected"].values())
    assert site["opted_out"] not in " ".join(str(m["To"]) for m in messages)
    flags = site["flags"]
    for message in messages:
        user = next(u for u, a in site["expected"].items() if a == message["To"])
        body = message.get_content()
        worst = (
            flags.filter(pl.col("user_name") == user)
            .group_by("job_id")
            .agg(pl.col("wasted_gpu_hours").max(), pl.col("recommendation").first())
            .sort("wasted_gpu_hours", descending=True)
            .row(0, named=True)
        )
        assert f"1. Job {worst['job_id']} " in body and "What to do: " in body and f"Hello {user}," in body
        assert message["Auto-Submitted"] == "auto-generated" and message["Reply-To"] == "gpu-help@example.org"
    ledger = _ledger(site)
    assert dict(zip(ledger["user_name"], ledger["address"], strict=True)) == site["expected"]
    assert ledger["month"].unique().to_list() == [date(2026, 3, 1)]


def test_3_a_second_run_within_the_period_sends_none(site: dict, smtp: SmtpServer) -> None:
    before = len(smtp.messages)
    done = _notify(site)
    assert "0 notice(s) sent" in done.stdout
    assert f"{len(site['expected'])} already notified" in done.stdout
    assert len(smtp.messages) == before and _ledger(site).height == len(site["expected"])


def test_4_the_monthly_asset_sends_what_the_ledger_lacks(site: dict, smtp: SmtpServer) -> None:
    """The monthly job's reports/user_notices on the same warehouse: a user whose ledger row is
    gone is told again, the others are already notified; nothing else is sent."""
    again = sorted(site["expected"])[0]
    with duckdb.connect(str(site["config"].with_name("cardhours.duckdb"))) as conn:
        conn.execute("DELETE FROM meta.user_notices WHERE user_name = ?", [again])
    before = len(smtp.messages)
    definitions = build_definitions(str(site["config"]))
    monthly = definitions.resolve_job_def("monthly_review")
    with DagsterInstance.ephemeral() as instance:
        result = monthly.execute_in_process(
            partition_key="2026-03-01", instance=instance, asset_selection=[AssetKey(["reports", "user_notices"])]
        )
    assert result.success
    (materialization,) = result.asset_materializations_for_node("reports__user_notices")
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["sent"] == 1 and metadata["skipped_already_notified"] == len(site["expected"]) - 1
    (message,) = smtp.wait_for(before + 1, 30)[before:]
    assert message["To"] == site["expected"][again]
    assert _ledger(site).height == len(site["expected"])


def test_5_a_notice_about_an_earlier_month_within_the_period_holds_the_next_one(site: dict, smtp: SmtpServer) -> None:
    """The rate limit across months: told about February 5 days ago, a user gets no March notice
    (period_days = 30); told 40 days ago, the user does."""
    recent, old = sorted(site["expected"])[:2]
    now = datetime.now(UTC).replace(tzinfo=None)
    with duckdb.connect(str(site["config"].with_name("cardhours.duckdb"))) as conn:
        for user, days in ((recent, 5), (old, 40)):
            conn.execute(
                "UPDATE meta.user_notices SET month = DATE '2026-02-01', sent_at = ? WHERE user_name = ?",
                [now - timedelta(days=days), user],
            )
    before = len(smtp.messages)
    done = _notify(site)
    assert "1 notice(s) sent" in done.stdout and "1 rate limited" in done.stdout
    assert f"  {recent}: notified within [notices] period_days: last notice" in done.stderr  # per user, on stderr
    (message,) = smtp.wait_for(before + 1, 30)[before:]
    assert message["To"] == site["expected"][old]
    rows = set(_ledger(site).filter(pl.col("user_name").is_in([recent, old])).select("user_name", "month").rows())
    feb, mar = date(2026, 2, 1), date(2026, 3, 1)
    assert rows == {(recent, feb), (old, feb), (old, mar)}  # the held user has no March row
