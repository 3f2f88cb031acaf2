"""Talking to a ``dagster-webserver`` the tests started: wait for it, send GraphQL."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    """POST a GraphQL query to the webserver on 127.0.0.1:``port``; the decoded answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_until_up(port: int, process: subprocess.Popen, timeout: float = 120) -> None:
    """Until ``/server_info`` answers; fails when the process exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"dagster-webserver exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("dagster-webserver did not answer within the timeout")
