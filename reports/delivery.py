"""Sending the month's planned messages once each: skip what the ledger says was sent, send
the rest one by one, and record each as soon as the relay accepted it.

The ledger is passed in (``sent``: what was delivered before; ``record``: called after each
accepted message), so a failure half-way leaves it exact: a rerun sends only what is missing.
``resend=True`` sends everything again (an explicit choice, ``cardhours deliver --resend``).
``dry_run``: a folder the messages are written to as ``.eml`` files instead; nothing is sent
or recorded. Every message is tried; ``DeliveryFailed`` then names each failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from config import SmtpConfig
from reports.atomic import write_atomic_with
from reports.delivery_mail import Outgoing, Planned
from reports.mail import MailError, send

Key = tuple[str, str]  # (audience, recipient)


@dataclass(frozen=True)
class Sent:
    """A message delivered before: when, and the digest of what it said."""

    at: datetime
    digest: str


class DeliveryFailed(RuntimeError):
    """At least one message was not sent; the text names each, and what was sent."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__("\n".join(outcome.lines()))
        self.outcome = outcome


@dataclass
class Outcome:
    sent: list[Outgoing] = field(default_factory=list)
    skipped: list[tuple[Outgoing, Sent]] = field(default_factory=list)  # sent before
    written: list[Path] = field(default_factory=list)  # dry run
    failed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What went to whom, for a person."""
        return [
            *(f"sent {m.audience} mail {m.subject!r} to {m.recipient}" for m in self.sent),
            *(f"wrote {path}" for path in self.written),
            *(_skipped(m, before) for m, before in self.skipped),
            *(f"FAILED {text}" for text in self.failed),
        ]


def _skipped(message: Outgoing, before: Sent) -> str:
    changed = " and has changed since" if before.digest != message.digest else ""
    return (
        f"skipped {message.audience} mail to {message.recipient}: sent {before.at:%Y-%m-%d %H:%M} UTC{changed} "
        "(--resend sends it again)"
    )


def eml_name(message: Outgoing) -> str:
    """``<audience>--<recipient>.eml`` with only safe characters."""
    return re.sub(r"[^A-Za-z0-9@._-]+", "_", f"{message.audience}--{message.recipient}") + ".eml"


def deliver(
    planned: Planned,
    smtp: SmtpConfig,
    env: Mapping[str, str],
    sent: Mapping[Key, Sent],
    record: Callable[[Outgoing, datetime], None],
    *,
    resend: bool = False,
    dry_run: Path | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(tzinfo=None),
) -> Outcome:
    """Send (or write) each planned message not sent before; ``DeliveryFailed`` after trying all.

    A recipient gets one message per audience in a run, even if planned twice (the config refuses
    an address listed twice; this holds for a plan made otherwise, and ignores the address's case).
    """
    outcome = Outcome(failed=list(planned.problems))
    tried: set[Key] = set()
    for message in planned.messages:
        key = (message.audience, message.recipient.lower())
        if key in tried:
            continue
        tried.add(key)
        before = sent.get((message.audience, message.recipient))
        if before is not None and not resend:
            outcome.skipped.append((message, before))
        elif dry_run is not None:
            target = Path(dry_run) / eml_name(message)
            outcome.written.append(
                write_atomic_with(target, lambda p, m=message: p.write_bytes(m.message(smtp).as_bytes()))
            )
        else:
            try:
                send(smtp, message.message(smtp), env)
            except MailError as error:
                outcome.failed.append(f"{message.audience} mail to {message.recipient}: {error}")
                continue
            record(message, now())
            outcome.sent.append(message)
    if outcome.failed:
        raise DeliveryFailed(outcome)
    return outcome
