"""Alerts sent for real: aiosmtpd on loopback (plain with login, STARTTLS, implicit TLS) and an
HTTP webhook endpoint, through reports/mail.py, reports/webhook.py and reports/alert_send.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import AlertsConfig, SmtpConfig
from reports.alert_send import AlertNotSent, deliver
from reports.alert_text import Alert
from reports.mail import MailError, compose, send
from tests.slurm_harness.procs import free_port
from tests.support.smtp import SmtpServer
from tests.support.webhook import WebhookServer

pytestmark = pytest.mark.integration

ENV = {"SMTP_USER": "cardhours", "SMTP_PASSWORD": "s3cret", "HOOK": ""}
ALERT = Alert("[cardhours] FAILED daily_ingest 2026-10-03", "The run abc of daily_ingest failed.\n")


def _smtp(port: int, security: str = "none", ca: Path | None = None, login: bool = True) -> SmtpConfig:
    auth = {"username_env": "SMTP_USER", "password_env": "SMTP_PASSWORD"} if login else {}
    return SmtpConfig(
        host="127.0.0.1", port=port, security=security, ca_bundle=ca, from_address="cardhours@example.org", **auth
    )


@pytest.mark.parametrize("tls", [None, "starttls", "ssl"])
def test_a_message_arrives_with_login(tmp_path: Path, tls: str | None) -> None:
    with SmtpServer(tmp_path, login=("cardhours", "s3cret"), tls=tls) as server:
        smtp = _smtp(server.port, tls or "none", server.ca_file)
        send(smtp, compose(smtp, ["ops@example.org"], ALERT.subject, ALERT.body), ENV)
        (message,) = server.wait_for(1, 10)
    assert message["Subject"] == ALERT.subject
    assert message["From"] == "cardhours@example.org"
    assert message["To"] == "ops@example.org"
    assert message.get_content().replace("\r\n", "\n") == ALERT.body
    assert server.inbox.envelopes == [("cardhours@example.org", ["ops@example.org"])]


def test_a_wrong_password_names_the_variables(tmp_path: Path) -> None:
    with SmtpServer(tmp_path, login=("cardhours", "other")) as server:
        smtp = _smtp(server.port)
        with pytest.raises(MailError, match=r"refused the login of SMTP_USER.*\$SMTP_USER and \$SMTP_PASSWORD"):
            send(smtp, compose(smtp, ["ops@example.org"], "s", "b"), ENV)
        assert server.messages == []


def test_an_unset_variable_is_named_before_connecting() -> None:
    smtp = _smtp(free_port())
    with pytest.raises(MailError, match="names SMTP_PASSWORD .* export SMTP_PASSWORD"):
        send(smtp, compose(smtp, ["ops@example.org"], "s", "b"), {"SMTP_USER": "u"})


def test_an_untrusted_certificate_is_refused(tmp_path: Path) -> None:
    with SmtpServer(tmp_path, tls="starttls") as server:
        smtp = _smtp(server.port, "starttls", login=False)  # no ca_bundle: the system CAs do not know it
        with pytest.raises(MailError, match=r"127\.0\.0\.1:\d+ \(starttls\) failed: .*CERTIFICATE_VERIFY_FAILED"):
            send(smtp, compose(smtp, ["ops@example.org"], "s", "b"), ENV)


def test_a_relay_that_is_down_is_named() -> None:
    port = free_port()
    smtp = _smtp(port, login=False)
    with pytest.raises(MailError, match=rf"SMTP relay 127\.0\.0\.1:{port} \(none\) failed: .*check \[smtp\] host"):
        send(smtp, compose(smtp, ["ops@example.org"], "s", "b"), ENV)


def test_both_channels_get_the_alert(tmp_path: Path) -> None:
    with SmtpServer(tmp_path) as server, WebhookServer() as hook:
        alerts = AlertsConfig(recipients=["ops@example.org", "oncall@example.org"], webhook_url_env="HOOK")
        sent = deliver(ALERT, alerts, _smtp(server.port, login=False), {**ENV, "HOOK": hook.url})
        (message,) = server.wait_for(1, 10)
    assert sent == ["e-mail to ops@example.org, oncall@example.org", "webhook $HOOK"]
    assert message["To"] == "ops@example.org, oncall@example.org"
    assert hook.posts == [{"text": ALERT.text}]


def test_a_failing_channel_does_not_silence_the_other(tmp_path: Path) -> None:
    with SmtpServer(tmp_path) as server, WebhookServer(status=500) as hook:
        alerts = AlertsConfig(recipients=["ops@example.org"], webhook_url_env="HOOK")
        with pytest.raises(AlertNotSent, match=r"HTTP 500.*\(sent: e-mail to ops@example.org\)"):
            deliver(ALERT, alerts, _smtp(server.port, login=False), {**ENV, "HOOK": hook.url})
        assert len(server.wait_for(1, 10)) == 1
