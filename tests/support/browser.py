"""Load a page in Debian's headless Chromium (driven by Playwright), collect console errors, screenshot it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class PageLoad:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    text: str = ""
    screenshot: Path | None = None
    plots_rendered: int = 0
    url: str = ""  # where a followed link led


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise AssertionError("chromium is not installed (Debian package 'chromium'; make test installs it)")
    return path


def load_page(html_file: Path, screenshot: Path, width: int = 1400, follow: str | None = None) -> PageLoad:
    """Open ``html_file`` offline, wait for Plotly to draw, record errors and every request made.

    ``follow``: the href of a link on that page to click first; the result is then the page it
    leads to (errors and requests of both pages recorded)."""
    from playwright.sync_api import sync_playwright

    result = PageLoad()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.on("console", lambda msg: msg.type == "error" and result.console_errors.append(msg.text))
            page.on("pageerror", lambda exc: result.page_errors.append(str(exc)))
            page.on("request", lambda request: result.requests.append(request.url))
            page.on("dialog", lambda dialog: (result.dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(html_file.resolve().as_uri(), wait_until="load")
            if follow is not None:
                with page.expect_navigation(wait_until="load"):
                    page.locator(f'a[href="{follow}"]').click()
                result.url = page.url
            page.wait_for_timeout(500)
            plots = page.locator(".js-plotly-plot")
            result.plots_rendered = plots.filter(has=page.locator(".main-svg")).count()
            result.text = page.inner_text("body")
            page.screenshot(path=str(screenshot), full_page=True)
            result.screenshot = screenshot
        finally:
            browser.close()
    return result
