"""The connection to the publication database (``[publish]``), with messages that say which key
or variable to fix."""

from __future__ import annotations

import os

import psycopg2
from psycopg2.extensions import connection as Connection

from config.publish import PublishConfig


class PublishError(RuntimeError):
    """The publication could not be done; the message names what to fix."""


def target(settings: PublishConfig) -> str:
    """``postgresql://user@host:port/database`` and the schema: where the marts go (no password)."""
    where = f"postgresql://{settings.user}@{settings.host}:{settings.port}/{settings.database}"
    return f"{where} schema {settings.target_schema}"


def password(settings: PublishConfig) -> str | None:
    """The password from ``password_env``; PublishError naming the variable when it is unset."""
    if settings.password_env is None:
        return None
    value = os.environ.get(settings.password_env)
    if not value:
        raise PublishError(
            f"[publish] password_env names {settings.password_env}, which is not set in this environment: "
            f"set {settings.password_env} to the password of PostgreSQL user {settings.user}"
        )
    return value


def connect(settings: PublishConfig) -> Connection:
    """A connection (not autocommit) to the publication database."""
    secret = password(settings)
    try:
        return psycopg2.connect(
            host=settings.host,
            port=settings.port,
            dbname=settings.database,
            user=settings.user,
            password=secret,
            sslmode=settings.sslmode,
            connect_timeout=settings.connect_timeout_seconds,
            application_name="cardhours publish",
        )
    except psycopg2.OperationalError as exc:
        raise PublishError(_refused(settings, str(exc).strip())) from exc


def _refused(settings: PublishConfig, error: str) -> str:
    where = target(settings).rsplit(" schema ", 1)[0]
    first = error.splitlines()[-1] if error else "no reason given"
    if "password authentication failed" in error:
        variable = settings.password_env or "(no password_env: add one)"
        return (
            f"{where} refused the password of user {settings.user} taken from {variable}: set {variable} "
            f"to that user's password ([publish] password_env), or fix [publish] user ({first})"
        )
    if "no password supplied" in error:
        return (
            f"{where} asks user {settings.user} for a password: set [publish] password_env to the variable holding it"
        )
    return (
        f"cannot connect to {where}: {first}; check [publish] host, port, database and sslmode, and that the "
        "server accepts this host (pg_hba.conf)"
    )
