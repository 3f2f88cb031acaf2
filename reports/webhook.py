"""Posting a short text to a chat webhook (Slack's incoming webhooks, and Mattermost's or
Rocket.Chat's, which take the same ``{"text": ...}`` body)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping


class WebhookError(RuntimeError):
    """The webhook could not be reached or refused the message."""


def post_text(url_env: str, text: str, env: Mapping[str, str], timeout_seconds: float = 30.0) -> None:
    """POST ``text`` to the URL held in the environment variable ``url_env``."""
    url = env.get(url_env)
    if not url:
        raise WebhookError(f"[alerts] webhook_url_env names {url_env}, which is not set: export the webhook URL in it")
    if not url.startswith(("https://", "http://")):
        raise WebhookError(f"${url_env} does not hold an http(s) URL: set it to the webhook's address")
    body = json.dumps({"text": text}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as answer:
            answer.read()
    except urllib.error.HTTPError as error:
        raise WebhookError(f"the webhook in ${url_env} answered HTTP {error.code}: {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise WebhookError(f"the webhook in ${url_env} could not be reached: {error}") from None
