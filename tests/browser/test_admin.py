"""The owner's control panel in a real browser: log in to /admin/, approve a waiting item
there, and see the verdict arrive on the flock page that is open beside it."""

from __future__ import annotations

import re
import subprocess

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot
from tests.support.server import PYTHON, ROOT

PASSWORD = "a-long-owner-password-1"


def create_owner_account(server) -> None:
    """As the README says: `manage.py createsuperuser` (here non-interactive)."""
    result = subprocess.run(
        [PYTHON, "manage.py", "createsuperuser", "--noinput", "--username", "owner", "--email", "owner@example.com"],
        cwd=ROOT, env={**server.env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_owner_approves_a_waiting_item_in_the_admin_and_the_flock_page_sees_the_verdict(flock, open_page, browser) -> None:
    create_owner_account(flock)
    page = open_page(flock.url + "/")
    page.fill("#list-text", "- Write a haiku about the crow café")
    page.click("#list-send")
    card = page.locator(".list-card").first
    expect(card.locator(".approval-triage").first).to_be_visible(timeout=30_000)

    context = browser.new_context()
    try:
        admin = context.new_page()
        admin.set_default_timeout(20_000)
        admin.goto(flock.url + "/admin/")
        admin.fill("#id_username", "owner")
        admin.fill("#id_password", PASSWORD)
        admin.click("input[type=submit]")
        expect(admin.locator("#site-name")).to_be_visible()
        admin.goto(flock.url + "/admin/trust/approval/")
        row = admin.locator("#result_list tbody tr").filter(has_text="Write a haiku about the crow café")
        expect(row).to_have_count(1)
        expect(row).to_contain_text(re.compile("triage", re.I))
        screenshot(admin, "admin-approvals")
        row.locator("input.action-select").check()
        admin.select_option("select[name=action]", "approve")
        admin.click("button[name=index]")
        expect(admin.locator("ul.messagelist")).to_contain_text("Approved")
    finally:
        context.close()

    # The page learns it from the stream, as for an approval made on the page.
    expect(card.locator(".verdict-approved").first).to_be_visible()
    expect(card.locator(".approval-triage")).to_have_count(0)
