"""Helpers the browser tests share: where Chromium is, how it is launched, screen sizes
and the stable screenshot names under docs/screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page

CHROMIUM = Path(os.environ.get("CROWS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save (overwrite) docs/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if full_page:
        # Sticky bars are drawn where the page is scrolled to; start from the top.
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    return path
