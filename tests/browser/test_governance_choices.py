"""A crow's choice in the browser (docs/GOVERNANCE.md, "1. Quill brings decisions"): the
owner answers it from its card on the flock page, one button per option with the
recommendation marked; the crow hears the choice in the room and acts on it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot

ASKING_HUGIN = [
    {"crow": "Hugin", "match": "chose A: Friday", "reply": "Shipping Friday, as you chose."},
    {"crow": "Hugin", "match": "plan the release",
     "reply": "[ASK_OWNER ship-day] When do we ship? A: Friday | B: Monday | recommend A because the launch post is ready"},
]


@pytest.fixture
def asking(live_server_factory: Callable[..., Any], tmp_path: Path) -> Any:
    rules = tmp_path / "hugin.json"
    rules.write_text(json.dumps(ASKING_HUGIN))
    return live_server_factory(env={"CROWS_BRAIN": f"script:{rules}", "CROWS_HEARTBEAT_S": "2"}).start()


def test_a_choice_is_answered_from_its_card(asking, open_page) -> None:
    page = open_page(asking.url + "/")
    r = asking.post("/api/nests/todo/messages", {"author": "owner", "text": "@Hugin plan the release"})
    assert r.status_code == 201, r.text

    card = page.locator('#decisions .decision[data-crow="Hugin"]')
    expect(card).to_be_visible(timeout=30_000)
    expect(card).to_contain_text("When do we ship?")
    expect(card.locator(".decision-rec")).to_contain_text("A because the launch post is ready")
    options = card.locator(".option-btn")
    expect(options).to_have_count(2)
    recommended = card.locator('.option-btn[data-recommended="true"]')
    expect(recommended).to_have_text("A: Friday (recommended)")
    expect(options.nth(1)).to_have_text("B: Monday")
    screenshot(page, "governance-choice-card")

    recommended.click()
    expect(card).to_have_count(0)
    decision = asking.get("/api/decisions?status=closed").json()[0]
    assert (decision["outcome"], decision["answered_by"]) == ("A: Friday", "owner")

    # Quill hands the choice back in the room and Hugin acts on it.
    deadline = time.monotonic() + 30
    texts: list[str] = []
    while time.monotonic() < deadline:
        messages = asking.get("/api/nests/todo/messages").json()["messages"]
        texts = [f"{m['author']}: {m['text']}" for m in messages]
        if "Hugin: Shipping Friday, as you chose." in texts:
            break
        time.sleep(0.2)
    assert "Hugin: Shipping Friday, as you chose." in texts
    assert any(t.startswith("Quill: @Hugin, the owner chose A: Friday") for t in texts)
