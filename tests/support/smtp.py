"""A real SMTP server on loopback for the tests: aiosmtpd, optionally with login and TLS.

``SmtpServer(tmp, login=("u", "p"), tls="starttls" | "ssl" | None)`` starts aiosmtpd on a free
port of 127.0.0.1 (in a thread of this process; it speaks SMTP over TCP like any relay, so the
Dagster daemon's processes reach it too). For TLS it makes a certificate for 127.0.0.1 with
Debian's ``openssl``; ``ca_file`` is that certificate, for the client to trust. Every accepted
message is parsed into ``messages``; ``wait_for(n)`` waits until ``n`` have arrived. Addresses
in ``inbox.refuse`` are refused at RCPT TO, as a relay refuses an unknown user.
"""

from __future__ import annotations

import ssl
import subprocess
import threading
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.slurm_harness.procs import free_port


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.arrived = threading.Condition()
        self.refuse: set[str] = set()  # recipients answered "550 no such user", as a relay does

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        if address in self.refuse:
            return f"550 5.1.1 <{address}>: no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        with self.arrived:
            self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            self.arrived.notify_all()
        return "250 OK"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, valid for a day."""
    cert, key = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class SmtpServer:
    def __init__(self, directory: Path, login: tuple[str, str] | None = None, tls: str | None = None) -> None:
        self.directory, self.login, self.tls = Path(directory), login, tls
        self.inbox = _Inbox()
        self.port = free_port()
        self.ca_file: Path | None = None
        self._controller: Controller | None = None

    @property
    def messages(self) -> list[EmailMessage]:
        return self.inbox.messages

    def _authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login.decode(), auth_data.password.decode()) == (
            self.login
        )
        return AuthResult(success=ok, handled=False)

    def __enter__(self) -> SmtpServer:
        context = None
        if self.tls is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            cert, key = self_signed(self.directory)
            self.ca_file = cert
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
        options: dict[str, object] = {}
        if self.login is not None:
            # AUTH only after STARTTLS; with implicit TLS aiosmtpd does not see the session as TLS,
            # although every byte is encrypted, so it must not ask for STARTTLS first.
            options.update(authenticator=self._authenticate, auth_require_tls=self.tls == "starttls")
        if self.tls == "starttls":
            options.update(tls_context=context, require_starttls=True)
        self._controller = Controller(
            self.inbox,
            hostname="127.0.0.1",
            port=self.port,
            ssl_context=context if self.tls == "ssl" else None,
            **options,
        )
        self._controller.start()
        return self

    def wait_for(self, count: int, timeout: float) -> list[EmailMessage]:
        """The first ``count`` messages, once they have arrived (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self.inbox.arrived:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.messages)} of {count} messages arrived in {timeout:.0f} s")
                self.inbox.arrived.wait(left)
        return self.messages[:count]

    def __exit__(self, *exc: object) -> None:
        if self._controller is not None:
            self._controller.stop()
