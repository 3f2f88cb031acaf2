"""The month's messages from [delivery] and the month's folder: standalone attachments, links,
the attachment limit, missing files named, and the ledger's skips (no relay needed: a dry run
writes the messages; tests/integration/test_delivery_mail.py sends them to aiosmtpd)."""

from __future__ import annotations

from datetime import datetime
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from config import DeliveryConfig, SmtpConfig
from reports import render_department_pages, render_review, write_department_pages, write_review
from reports.delivery import DeliveryFailed, Sent, deliver
from reports.delivery_mail import Planned, plan_month
from tests.unit.reports_frames import BUNDLE, make_inputs

SMTP = SmtpConfig(host="127.0.0.1", port=25, security="none", from_address="cardhours@example.org")
OPS, FIN, LEAD = "ops@example.org", "fin@example.org", "lead@example.org"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    inputs = make_inputs()
    write_review(render_review(inputs), tmp_path, "2025-03")
    write_department_pages(render_department_pages(inputs), tmp_path, "2025-03")
    (tmp_path / "2025-03" / "chargeback_focus.csv").write_text("BilledCost\n1.00\n")
    return tmp_path / "2025-03"


def _delivery(**changes) -> DeliveryConfig:
    return DeliveryConfig(**{"operations": [OPS], "finance": [FIN], "departments": {"physics": [LEAD]}} | changes)


def test_pages_are_attached_standalone_and_finance_gets_the_files_it_has(folder: Path) -> None:
    planned = plan_month(_delivery(), make_inputs(), folder)
    assert planned.problems == []
    by = {m.recipient: m for m in planned.messages}
    assert [(a.name, a.mime) for a in by[OPS].attachments] == [("review.html", ("text", "html"))]
    assert BUNDLE[:2000] in by[OPS].attachments[0].data.decode()
    assert [a.name for a in by[LEAD].attachments] == ["physics.html"]
    assert [(a.name, a.data) for a in by[FIN].attachments] == [("chargeback_focus.csv", b"BilledCost\n1.00\n")]
    assert by[LEAD].audience == "department:physics" and "GPU use of physics in 2025-03" in by[LEAD].body


def test_links_replace_attachments(folder: Path) -> None:
    delivery = _delivery(pages="link", finance_files="link", link_base_url="https://r.example.org/gpu")
    by = {m.recipient: m for m in plan_month(delivery, make_inputs(), folder).messages}
    assert all(m.attachments == () for m in by.values())
    assert "  https://r.example.org/gpu/2025-03/review.html" in by[OPS].body
    assert "  https://r.example.org/gpu/2025-03/departments/physics.html" in by[LEAD].body


def test_over_the_limit_or_missing_files_are_named_and_the_rest_planned(folder: Path) -> None:
    (folder / "chargeback_focus.csv").unlink()
    planned = plan_month(_delivery(max_attachment_mb=1), make_inputs(), folder)
    assert [m.recipient for m in planned.messages] == []  # the pages are ~5 MB standalone
    operations, department, finance = planned.problems
    assert operations.startswith(f"operations: {folder / 'review.html'} weigh ")
    assert 'max_attachment_mb = 1: raise it, or set pages = "link" with link_base_url' in operations
    assert department.startswith("department physics: ")
    assert finance == f"finance: no chargeback files in {folder}: run the month's chargeback first"


def test_a_department_without_a_page_gets_the_summary(folder: Path) -> None:
    planned = plan_month(_delivery(operations=[], finance=[], departments={"chem": [LEAD]}), make_inputs(), folder)
    (message,) = planned.messages
    assert message.attachments == () and "it has no page" in message.body.lower()


def test_dry_run_writes_what_was_not_sent_and_names_changes(folder: Path, tmp_path: Path) -> None:
    planned = plan_month(_delivery(), make_inputs(), folder)
    at = datetime(2025, 4, 1, 6, 30)
    sent = {("operations", OPS): Sent(at, "an older digest"), ("finance", FIN): Sent(at, planned.messages[-1].digest)}
    outbox = tmp_path / "outbox"
    outcome = deliver(planned, SMTP, {}, sent, lambda m, t: pytest.fail("a dry run records"), dry_run=outbox)
    assert [p.name for p in outcome.written] == [f"department_physics--{LEAD}.eml"]
    message = message_from_bytes(outcome.written[0].read_bytes(), policy=policy.default)
    assert message["To"] == LEAD and message["From"] == "cardhours@example.org"
    assert outcome.lines()[1:] == [
        f"skipped operations mail to {OPS}: sent 2025-04-01 06:30 UTC and has changed since (--resend sends it again)",
        f"skipped finance mail to {FIN}: sent 2025-04-01 06:30 UTC (--resend sends it again)",
    ]


def test_problems_fail_the_delivery_after_the_rest(folder: Path, tmp_path: Path) -> None:
    (folder / "chargeback_focus.csv").unlink()
    planned = plan_month(_delivery(), make_inputs(), folder)
    with pytest.raises(DeliveryFailed) as info:
        deliver(planned, SMTP, {}, {}, lambda m, t: None, dry_run=tmp_path / "outbox")
    assert len(info.value.outcome.written) == 2
    assert str(info.value).splitlines()[-1].startswith("FAILED finance: no chargeback files in ")


def test_a_recipient_is_sent_once_in_a_run(folder: Path, tmp_path: Path) -> None:
    """The config refuses a listed address twice; the loop holds too: one message per (audience, recipient)."""
    planned = plan_month(_delivery(), make_inputs(), folder)
    twice = Planned([*planned.messages, planned.messages[0]], [])
    outcome = deliver(twice, SMTP, {}, {}, lambda m, t: None, dry_run=tmp_path / "outbox")
    assert len(outcome.written) == len(planned.messages)
