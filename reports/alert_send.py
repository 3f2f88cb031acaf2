"""Sending an alert on every channel ``[alerts]`` configures: e-mail to the recipients through
``[smtp]``, and the chat webhook. Every channel is tried; if any failed, ``AlertNotSent`` names
each failure after the others were tried, so one broken channel does not silence the rest."""

from __future__ import annotations

from collections.abc import Mapping

from config import AlertsConfig, SmtpConfig
from reports.alert_text import Alert
from reports.mail import MailError, compose, send
from reports.webhook import WebhookError, post_text


class AlertNotSent(RuntimeError):
    """At least one channel failed; the text lists what failed and what was sent."""


def deliver(alert: Alert, alerts: AlertsConfig, smtp: SmtpConfig | None, env: Mapping[str, str]) -> list[str]:
    """Send ``alert``; the channels it reached, e.g. ``["e-mail to ops@example.org"]``."""
    sent, failed = [], []
    if alerts.recipients and smtp is not None:
        try:
            send(smtp, compose(smtp, alerts.recipients, alert.subject, alert.body), env)
            sent.append(f"e-mail to {', '.join(alerts.recipients)}")
        except MailError as error:
            failed.append(str(error))
    if alerts.webhook_url_env is not None:
        try:
            post_text(alerts.webhook_url_env, alert.text, env)
            sent.append(f"webhook ${alerts.webhook_url_env}")
        except WebhookError as error:
            failed.append(str(error))
    if failed:
        reached = f" (sent: {'; '.join(sent)})" if sent else ""
        raise AlertNotSent(f"alert {alert.subject!r} not sent: " + "; ".join(failed) + reached)
    return sent
