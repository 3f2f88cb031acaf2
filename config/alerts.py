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
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from config.base import ConfigPath, EnvVarName, Loc, PositiveFloat, PositiveInt, StrictModel, Text, raise_problems
from config.urls import BaseUrl

# Enough of an address to catch a typo or a display name ("Ops <ops@x>"), not RFC 5322.
_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")


def _check_address(value: str) -> str:
    if not _ADDRESS.match(value):
        raise ValueError(f"{value!r} is not an e-mail address (name@domain, without a display name)")
    return value


def is_address(value: str) -> bool:
    return _ADDRESS.match(value) is not None


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
