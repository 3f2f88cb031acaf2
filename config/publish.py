"""Where the public marts are published for dashboards and BI tools: ``[publish]`` (docs/publish.md).

A PostgreSQL database that Grafana, Metabase or Superset read. The password is never in the
file: ``password_env`` names the environment variable that holds it, read when publishing.
``marts`` names the tables to publish (default: every public mart); the names are checked
against the declared tables where the publication starts (pipelines/publish.py), since the
config layer does not know the table registry.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from config.base import EnvVarName, PositiveInt, StrictModel, Text

# A PostgreSQL identifier cardhours creates without quoting: lowercase, digits, '_'.
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _check_identifier(value: str) -> str:
    if not _IDENTIFIER.match(value):
        raise ValueError(f"{value!r} is not a PostgreSQL name cardhours uses: lowercase a-z, 0-9 and '_', at most 63")
    return value


def _check_unique(values: list[str] | None) -> list[str] | None:
    if values is not None:
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"named twice: {', '.join(repeated)}")
        if not values:
            raise ValueError("names no mart: leave the key out to publish every public mart")
    return values


Identifier = Annotated[str, AfterValidator(_check_identifier)]


class PublishConfig(StrictModel):
    """``[publish]``: the PostgreSQL database the month's marts are copied to."""

    host: Text
    port: Annotated[int, Field(ge=1, le=65535)] = 5432
    database: Text
    user: Text
    password_env: EnvVarName | None = None  # None: no password (peer, trust or a client certificate)
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = "prefer"
    target_schema: Identifier = "cardhours"  # created if missing; tables keep their mart names
    marts: Annotated[list[Identifier] | None, AfterValidator(_check_unique)] = None  # None: every public mart
    connect_timeout_seconds: PositiveInt = 10
