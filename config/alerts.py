"""Who is told when something fails, and through which mail server: ``[smtp]`` and ``[alerts]``.

``[smtp]`` is the site's mail relay, shared by everything cardhours sends. Credentials are
never in the file: ``username_env`` and ``password_env`` name the environment variables that
hold them, read when a message is sent.

``[alerts]`` turns on the failure alerts (pipelines/alerts.py): a failed Dagster run, and a
cluster with no successful daily landing for ``freshness_hours``. Alerts go by e-mail to
``recipients`` and, optionally, to a chat webhook whose URL is in ``webhook_url_env``.
"""

from __future__ import annotations

import re
from email.errors import HeaderParseError
from email.headerregistry import Address as HeaderAddress
from email.utils import parseaddr
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from config.base import ConfigPath, EnvVarName, Loc, PositiveFloat, PositiveInt, StrictModel, Text, raise_problems
from config.urls import BaseUrl

# name@domain.tld without spaces or list separators; the rest of RFC 5322 is checked by parsing
# (_single_address): one address, nothing around it, no comments, no display name.
_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")
# RFC 5322 dot-atom-text: atext characters (ASCII) in runs joined by single dots.
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_DOT_ATOM = re.compile(rf"^{_ATEXT}(\.{_ATEXT})*$")
ATEXT_WORDS = "letters, digits, ! # $ % & ' * + - / = ? ^ _ ` { | } ~ and single dots between them"


def _single_address(value: str) -> bool:
    """``value`` parses as exactly one addr-spec and nothing else (headerregistry and parseaddr agree)."""
    try:
        parsed = HeaderAddress(addr_spec=value)
    except (ValueError, HeaderParseError, IndexError):
        return False
    return parsed.addr_spec == value and parseaddr(value) == ("", value)


def _check_address(value: str) -> str:
    if not is_address(value):
        raise ValueError(f"{value!r} is not an e-mail address (name@domain, without a display name)")
    return value


def is_address(value: str) -> bool:
    return _ADDRESS.match(value) is not None and _single_address(value)


def is_dot_atom(value: str) -> bool:
    """Whether ``value`` can stand unquoted as an address's local part (RFC 5322 dot-atom)."""
    return _DOT_ATOM.match(value) is not None


Address = Annotated[str, AfterValidator(_check_address)]


class SmtpConfig(StrictModel):
    """``[smtp]``: the relay cardhours sends mail through."""

    host: Text
    port: Annotated[int, Field(ge=1, le=65535)] = 587
    # "starttls": plain connection upgraded by STARTTLS (port 587); "ssl": TLS from the first
    # byte (port 465); "none": no encryption (a relay on localhost or a trusted network only).
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username_env: EnvVarName | None = None
    password_env: EnvVarName | None = None
    ca_bundle: ConfigPath | None = None  # a private CA's certificates (PEM) for the relay's TLS; else the system's
    from_address: Address
    timeout_seconds: PositiveFloat = 30.0

    @model_validator(mode="after")
    def _credentials_paired(self) -> SmtpConfig:
        if (self.username_env is None) != (self.password_env is None):
            missing = "password_env" if self.password_env is None else "username_env"
            raise_problems([((missing,), "required key is missing: SMTP login needs both the user and the password")])
        return self


class AlertsConfig(StrictModel):
    """``[alerts]``: failure and freshness alerts."""

    recipients: list[Address] = Field(default_factory=list)
    webhook_url_env: EnvVarName | None = None  # a Slack-compatible incoming webhook, its URL in this variable
    # A cluster whose newest successful landing of a source is older than this is reported.
    # The daily ingest runs once a day, so a day and a half tolerates one slow run.
    freshness_hours: PositiveInt = 36
    # The Dagster UI's address as the recipients reach it (e.g. "https://dagster.example.org"):
    # a failure alert then links to the run.
    ui_url: BaseUrl | None = None

    @model_validator(mode="after")
    def _somewhere_to_send(self) -> AlertsConfig:
        problems: list[tuple[Loc, str]] = []
        if not self.recipients and self.webhook_url_env is None:
            problems.append((("recipients",), "alerts need recipients, or webhook_url_env, or both"))
        raise_problems(problems)
        return self
