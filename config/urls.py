"""URLs as a person may see them: ``redact_url`` for every URL that goes into a message,
a log line, Dagster metadata or a report.

Credentials belong in the environment variables the config names (``bearer_token_env``,
``basic_auth_user_env`` / ``basic_auth_password_env``), never in a URL; the config rejects a
URL that carries them (``url_problem``), and whatever is printed is redacted anyway.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import unquote_plus, urlsplit

from pydantic import AfterValidator

MASK = "***"
# A query parameter whose name (lower case, without '-' and '_') contains one of these holds a secret.
SECRET_PARAMETERS = ("token", "password", "passwd", "pwd", "key", "secret", "auth", "signature", "credential")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#]*@")


def without_userinfo(url: str) -> str:
    """``url`` without its ``user:password@`` part (everything up to the last ``@`` of the authority)."""
    return _USERINFO.sub(r"\1", url)


def _secret(name: str) -> bool:
    plain = unquote_plus(name).lower().replace("-", "").replace("_", "")
    return any(word in plain for word in SECRET_PARAMETERS)


def _mask_parameters(text: str) -> str:
    """``a=1&token=x`` -> ``a=1&token=***``; other parameters kept as written."""
    parts = []
    for part in text.split("&"):
        name, equals, _ = part.partition("=")
        parts.append(f"{name}={MASK}" if equals and _secret(name) else part)
    return "&".join(parts)


def redact_url(url: str) -> str:
    """``url`` fit to print: no user info, secret-looking query (and fragment) parameters masked.
    ``http://u:pw@prom:9090/api?query=up&token=abc`` -> ``http://prom:9090/api?query=up&token=***``.
    Never raises, whatever the text."""
    rest = without_userinfo(url)
    rest, hash_mark, fragment = rest.partition("#")
    base, question, query = rest.partition("?")
    query = _mask_parameters(query) if question else ""
    fragment = _mask_parameters(fragment) if hash_mark else ""
    return f"{base}{question}{query}{hash_mark}{fragment}"


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server's base URL (None when it can): http(s) with a host, no
    credentials, no query or fragment (the API paths are appended to it)."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"is not a URL ({exc}; got {redact_url(url)!r})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host (got {redact_url(url)!r})"
    if "@" in parts.netloc:
        return (
            "must not carry credentials ('user:password@'): put them in environment variables and name "
            "those with bearer_token_env, or basic_auth_user_env and basic_auth_password_env "
            f"(got {redact_url(url)!r}, credentials removed)"
        )
    if parts.query or parts.fragment:
        return (
            f"must not carry a query ('?...') or fragment ('#...'): the API paths are appended to it "
            f"(got {redact_url(url)!r})"
        )
    return None


def _base_url(value: str) -> str:
    if (problem := url_problem(value)) is not None:
        raise ValueError(problem)
    return value.rstrip("/")


# A server's base URL in the config (``url_problem`` names what is wrong), without a trailing "/".
BaseUrl = Annotated[str, AfterValidator(_base_url)]
