"""The month delivered to a real SMTP server (aiosmtpd on loopback, with login): the review to
operations, a department's page to its managers and the finance files to finance, each to the
right envelope recipients; the attached pages draw on their own (plotly.js inlined); the ledger
(meta.deliveries) keeps a rerun from sending again, ``--resend`` sends again, ``--dry-run``
writes .eml files only, a refused recipient is named and sent alone on the rerun, and the
monthly build's delivery step does the same."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from dagster import materialize
from typer.testing import CliRunner

from cardhours.cli import app
from pipelines.assets.delivery import review_delivery
from pipelines.assets.reports import review_html
from pipelines.resources import CardhoursResource
from reports.plotly_asset import plotly_js_name
from tests.integration.test_review_asset import run_month, warehouse_config  # noqa: F401 (the fixture)
from tests.support.smtp import SmtpServer
from tests.unit.reports_frames import BUNDLE
from warehouse import connect

pytestmark = pytest.mark.integration

FROM = "cardhours@example.org"
OPS, FIN, LEAD, PI = "gpu-ops@example.org", "finance@example.org", "phys-lead@example.org", "phys-pi@example.org"
FILES = {"chargeback_focus.csv": "BilledCost,x_Job\n12.40,1\n", "chargeback_jobs.csv": "job_id\n1\n"}
runner = CliRunner()


def _configure(config: Path, port: int, delivery: str = "") -> None:
    text = config.read_text(encoding="utf-8")
    text = text.replace('host = "smtp.example.org"\nport = 587', f'host = "127.0.0.1"\nport = {port}', 1)
    text = re.sub(r'(?m)^security = "starttls".*$', 'security = "none"', text, count=1)
    text += '\n[org.departments.physics]\nname = "Physics"\ndivision = "research"\n'
    text += delivery or (
        f'\n[delivery]\noperations = ["{OPS}"]\nfinance = ["{FIN}"]\n'
        f'[delivery.departments]\nphysics = ["{LEAD}", "{PI}"]\n'
    )
    config.write_text(text, encoding="utf-8")


@pytest.fixture
def month(warehouse_config: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # noqa: F811 (the imported fixture)
    """The 2025-03 review and department pages built, the finance files beside them, and a
    login relay the config points at."""
    run_month(warehouse_config)
    folder = warehouse_config.parent / "reports" / "2025-03"
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("CARDHOURS_SMTP_USER", "cardhours")
    monkeypatch.setenv("CARDHOURS_SMTP_PASSWORD", "s3cret")
    with SmtpServer(tmp_path / "smtp", login=("cardhours", "s3cret")) as server:
        _configure(warehouse_config, server.port)
        yield warehouse_config, server


def _deliver(config: Path, *extra: str):
    return runner.invoke(app, ["deliver", "--config", str(config), "--month", "2025-03", *extra])


def _ledger(config: Path) -> list[tuple]:
    conn = connect(config.parent / "cardhours.duckdb")
    try:
        return conn.execute("SELECT audience, recipient, length(digest) FROM meta.deliveries ORDER BY ALL").fetchall()
    finally:
        conn.close()


def _attachment(message: EmailMessage) -> tuple[str, str]:
    (part,) = message.iter_attachments()
    return part.get_filename(), part.get_content()


def _by_recipient(server: SmtpServer, count: int) -> dict[str, EmailMessage]:
    messages = server.wait_for(count, 20)
    assert all(sender == FROM and len(rcpts) == 1 for sender, rcpts in server.inbox.envelopes)
    return {rcpts[0]: m for (_, rcpts), m in zip(server.inbox.envelopes, messages, strict=True)}


def test_each_audience_gets_its_mail_once(month) -> None:
    config, server = month
    result = _deliver(config)
    assert result.exit_code == 0, result.output
    mail = _by_recipient(server, 4)
    assert sorted(mail) == sorted([OPS, FIN, LEAD, PI])
    assert mail[OPS]["Subject"] == "[cardhours] GPU review 2025-03" and mail[OPS]["To"] == OPS
    body = mail[OPS].get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert "\n  Capacity:     1,000.0 GPU-hours\n" in body and "\nFlagged job runs: 2. " in body
    assert mail[OPS].get_body(("plain",)).get_content_type() == "text/plain"
    name, page = _attachment(mail[OPS])
    assert name == "review.html" and BUNDLE[:2000] in page and plotly_js_name() not in page
    assert "<h2" in page and "Headline numbers" in page
    for manager in (LEAD, PI):
        name, page = _attachment(mail[manager])
        assert name == "physics.html" and BUNDLE[:2000] in page and "GPU use of physics" in page
        assert mail[manager]["Subject"] == "[cardhours] GPU use of physics 2025-03"
        assert "Job 3" not in mail[manager].get_body(("plain",)).get_content()  # another department's job
    files = {p.get_filename(): p.get_content() for p in mail[FIN].iter_attachments()}
    assert {k: v.replace("\r\n", "\n") for k, v in files.items()} == FILES
    assert f"sent operations mail '[cardhours] GPU review 2025-03' to {OPS}" in result.output
    assert _ledger(config) == [
        ("department:physics", LEAD, 64),
        ("department:physics", PI, 64),
        ("finance", FIN, 64),
        ("operations", OPS, 64),
    ]

    again = _deliver(config)
    assert again.exit_code == 0 and f"skipped finance mail to {FIN}: sent " in again.output
    assert len(server.messages) == 4

    resent = _deliver(config, "--resend")
    assert resent.exit_code == 0, resent.output
    assert len(server.wait_for(8, 20)) == 8 and len(_ledger(config)) == 4


def test_dry_run_writes_the_messages_and_sends_nothing(month, tmp_path: Path) -> None:
    config, server = month
    out = tmp_path / "outbox"
    result = _deliver(config, "--dry-run", str(out))
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in out.iterdir())
    assert written == [f"department_physics--{LEAD}.eml", f"department_physics--{PI}.eml", f"finance--{FIN}.eml",
                       f"operations--{OPS}.eml"]  # fmt: skip
    review = message_from_bytes((out / f"operations--{OPS}.eml").read_bytes(), policy=policy.default)
    assert review["To"] == OPS and _attachment(review)[0] == "review.html"
    assert server.messages == [] and _ledger(config) == []


def test_a_refused_recipient_is_named_and_the_rerun_sends_only_it(month) -> None:
    config, server = month
    server.inbox.refuse = {PI}
    result = _deliver(config)
    assert result.exit_code == 1
    assert f"FAILED department:physics mail to {PI}: SMTP relay 127.0.0.1:{server.port} (none) refused" in result.output
    assert "check the addresses in the config" in result.output
    assert len(server.wait_for(3, 20)) == 3 and len(_ledger(config)) == 3
    server.inbox.refuse = set()
    assert _deliver(config).exit_code == 0
    assert server.wait_for(4, 20)[-1]["To"] == PI and server.inbox.envelopes[-1][1] == [PI]
    assert len(_ledger(config)) == 4


def test_the_monthly_step_sends_once_and_links_when_configured(month) -> None:
    config, server = month
    text = config.read_text(encoding="utf-8").split("\n[delivery]\n")[0]
    config.write_text(
        text + f'\n[delivery]\noperations = ["{OPS}"]\nfinance = ["{FIN}"]\nfinance_files = "link"\n'
        'link_base_url = "https://gpu.example.org/reports/"\n',
        encoding="utf-8",
    )
    resources = {"cardhours": CardhoursResource(config_path=str(config))}
    for expected in (2, 0):
        result = materialize([review_html, review_delivery], partition_key="2025-03-01", resources=resources)
        assert result.success
        metadata = result.asset_materializations_for_node("reports__review_delivery")[0].metadata
        assert metadata["sent"].value == expected and metadata["already_sent"].value == 2 - expected
    mail = _by_recipient(server, 2)
    assert list(mail[FIN].iter_attachments()) == []
    finance = mail[FIN].get_content()
    assert "https://gpu.example.org/reports/2025-03/chargeback_focus.csv" in finance
    assert _attachment(mail[OPS])[0] == "review.html"


def test_without_a_delivery_section_the_step_sends_nothing(warehouse_config: Path) -> None:  # noqa: F811 (the imported fixture)
    resources = {"cardhours": CardhoursResource(config_path=str(warehouse_config))}
    result = materialize([review_delivery], partition_key="2025-03-01", resources=resources)
    assert result.success
    metadata = result.asset_materializations_for_node("reports__review_delivery")[0].metadata
    assert metadata["configured"].value is False and metadata["sent"].value == 0
