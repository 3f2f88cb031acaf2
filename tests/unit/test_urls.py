"""URLs: redaction of everything printed, and the config refusing credentials in a server URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from cardhours.cli import app
from config import EXAMPLE_CONFIG, Problem
from config.alerts import AlertsConfig
from config.delivery import DeliveryConfig
from config.urls import redact_url, url_problem, without_userinfo
from tests.unit.config_cases import PROM, example, problems_of, put

CREDENTIALS = (
    "must not carry credentials ('user:password@'): put them in environment variables and name those "
    "with bearer_token_env, or basic_auth_user_env and basic_auth_password_env "
    "(got 'http://prom.example:9090', credentials removed)"
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:hunter2@prom.example:9090/api/v1/query", "http://prom.example:9090/api/v1/query"),
        ("http://alice@prom.example", "http://prom.example"),
        ("https://alice:p@ss@prom.example/", "https://prom.example/"),  # up to the authority's last '@'
        ("http://:hunter2@prom.example", "http://prom.example"),
        ("http://alice:hunter2@[::1]:9090", "http://[::1]:9090"),
        ("http://prom.example/api?query=up&token=abc", "http://prom.example/api?query=up&token=***"),
        (
            "http://p/?password=a&passwd=b&pwd=c&secret=d&auth=e",
            "http://p/?password=***&passwd=***&pwd=***&secret=***&auth=***",
        ),
        ("http://p/?apikey=a&api_key=b&X-Api-Key=c&key=d", "http://p/?apikey=***&api_key=***&X-Api-Key=***&key=***"),
        (
            "http://p/?access_token=a&client_secret=b&Authorization=c&X-Amz-Signature=d&credential=e",
            "http://p/?access_token=***&client_secret=***&Authorization=***&X-Amz-Signature=***&credential=***",
        ),
        (
            "http://p/?query=up%7Bjob%3D%22x%22%7D&time=1&step=30",
            "http://p/?query=up%7Bjob%3D%22x%22%7D&time=1&step=30",
        ),
        ("http://p/#access_token=abc&state=1", "http://p/#access_token=***&state=1"),
        ("http://p/?token", "http://p/?token"),  # a flag without a value has nothing to hide
        ("http://p/user@host/x", "http://p/user@host/x"),  # '@' in the path is not user info
        ("http://[::1", "http://[::1"),  # not a URL: returned, not raised
        ("prometheus:9090", "prometheus:9090"),
        ("", ""),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "hunter2" not in redact_url(url) and "alice" not in redact_url(url)


def test_without_userinfo_keeps_the_query() -> None:
    assert without_userinfo("http://a:b@h:1/p?token=x") == "http://h:1/p?token=x"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://prom.example:9090", None),
        ("https://[::1]:9090/prefix", None),
        ("http://alice:hunter2@prom.example:9090", CREDENTIALS),
        ("http://alice@prom.example:9090", CREDENTIALS),
        (
            "http://prom.example:9090?token=abc",
            "must not carry a query ('?...') or fragment ('#...'): the API paths are "
            "appended to it (got 'http://prom.example:9090?token=***')",
        ),
        (
            "ftp://alice:hunter2@prom.example",
            "must be an http:// or https:// URL with a host (got 'ftp://prom.example')",
        ),
        ("http://:9090", "must be an http:// or https:// URL with a host (got 'http://:9090')"),
    ],
)
def test_url_problem(url: str, problem: str | None) -> None:
    assert url_problem(url) == problem


def test_config_names_the_key_of_a_url_with_credentials() -> None:
    problems = problems_of(example(put(f"{PROM}.url", "http://alice:hunter2@prom.example:9090")))
    assert problems == [Problem(f"{PROM}.url", CREDENTIALS)]


def test_config_check_rejects_credentials_without_printing_them(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(
        EXAMPLE_CONFIG.read_text().replace(
            'url = "http://127.0.0.1:9090"', 'url = "http://alice:hunter2@127.0.0.1:9090"', 1
        )
    )
    result = CliRunner().invoke(app, ["config", "check", str(site)])
    assert result.exit_code == 2
    output = result.output.replace("\n", "")
    assert f"{site}: clusters[0].prometheus.url: must not carry credentials" in output
    assert "bearer_token_env" in output and "basic_auth_password_env" in output
    assert "hunter2" not in output and "alice" not in output


@pytest.mark.parametrize(
    ("section", "key", "required"),
    [
        (DeliveryConfig, "link_base_url", {"operations": ["ops@example.org"]}),
        (AlertsConfig, "ui_url", {"recipients": ["ops@example.org"]}),
    ],
)
def test_base_urls_in_the_config_are_checked_and_lose_a_trailing_slash(section, key, required) -> None:
    assert (
        getattr(section(**required, **{key: "https://reports.example.org/r/"}), key) == "https://reports.example.org/r"
    )
    with pytest.raises(ValidationError, match=f"{key}\n.*must not carry credentials"):
        section(**required, **{key: "https://user:pw@reports.example.org/r"})
