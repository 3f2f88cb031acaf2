"""Sending e-mail through the site's relay (``[smtp]``): one function for every message cardhours sends.

Credentials are read from the environment variables ``[smtp]`` names, when a message is sent,
so a wrong or missing variable is reported then, naming the variable. Every failure (no
connection, TLS refused, login refused, recipients refused) is a ``MailError`` that says which
relay, which message and what to check.
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Mapping, Sequence
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from config import SmtpConfig


class MailError(RuntimeError):
    """A message could not be sent; the text says where and what to check."""


def compose(smtp: SmtpConfig, to: Sequence[str], subject: str, body: str) -> EmailMessage:
    """A plain-text message from ``[smtp] from_address`` to ``to``."""
    message = EmailMessage()
    message["From"] = Address(addr_spec=smtp.from_address)
    message["To"] = [Address(addr_spec=address) for address in to]  # each one address, parsed
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=smtp.from_address.rsplit("@", 1)[1])
    message.set_content(body)
    return message


def send(smtp: SmtpConfig, message: EmailMessage, env: Mapping[str, str]) -> None:
    """Deliver ``message`` to the relay (``MailError`` naming the relay and the cause)."""
    where = f"SMTP relay {smtp.host}:{smtp.port} ({smtp.security})"
    login = _credentials(smtp, env)
    try:
        with _connect(smtp) as client:
            if smtp.security == "starttls":
                client.starttls(context=_tls(smtp))
            if login is not None:
                client.login(*login)
            client.send_message(message)
    except smtplib.SMTPAuthenticationError as error:
        raise MailError(
            f"{where} refused the login of {smtp.username_env}: {_reply(error)}; "
            f"check the user and password in ${smtp.username_env} and ${smtp.password_env}"
        ) from None
    except smtplib.SMTPRecipientsRefused as error:
        refused = ", ".join(sorted(error.recipients))
        raise MailError(f"{where} refused the recipients {refused}: check the addresses in the config") from None
    except (smtplib.SMTPException, ssl.SSLError, OSError) as error:
        raise MailError(
            f"sending {message['Subject']!r} through {where} failed: {_reply(error)}; "
            "check [smtp] host, port and security, and that the relay is reachable from this host"
        ) from None


def _credentials(smtp: SmtpConfig, env: Mapping[str, str]) -> tuple[str, str] | None:
    if smtp.username_env is None or smtp.password_env is None:
        return None
    missing = [name for name in (smtp.username_env, smtp.password_env) if not env.get(name)]
    if missing:
        raise MailError(
            f"[smtp] names {' and '.join(missing)} for the relay's login, but the environment does not set "
            f"{'them' if len(missing) > 1 else 'it'}: export {' and '.join(missing)} for the service that sends mail"
        )
    return env[smtp.username_env], env[smtp.password_env]


def _connect(smtp: SmtpConfig) -> smtplib.SMTP:
    if smtp.security == "ssl":
        return smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout_seconds, context=_tls(smtp))
    return smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_seconds)


def _tls(smtp: SmtpConfig) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(smtp.ca_bundle) if smtp.ca_bundle else None)


def _reply(error: BaseException) -> str:
    """The server's reply text, or the error's own."""
    text = getattr(error, "smtp_error", None)
    if isinstance(text, bytes):
        return f"{getattr(error, 'smtp_code', '')} {text.decode('utf-8', 'replace')}".strip()
    return str(error) or type(error).__name__
