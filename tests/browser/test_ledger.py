"""Work that doesn't stall, in the browser: a stalled claim's expectation beside the nest
with its due time and nudge count, the owner's summary standing out; a debate drawn as
rounds with stances and the verdict; a crow's page with its memory and the orchestration
decisions that involved it."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot

STALLING = [
    {"crow": "Hugin", "match": "NUDGE", "reply": "Still on it."},
    {"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "reply": "Working on it."},
]


@pytest.fixture
def stalling(live_server_factory, tmp_path):
    rules = tmp_path / "hugin.json"
    rules.write_text(json.dumps(STALLING))
    env = {"CROWS_BRAIN": f"script:{rules}", "CROWS_HEARTBEAT_S": "2", "CROWS_EXPECTATION_DUE_S": "1"}
    return live_server_factory(env=env).start()


def test_a_stalled_claim_is_nudged_beside_the_nest_and_the_summary_stands_out(stalling, open_page) -> None:
    r = stalling.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin"]})
    assert r.status_code == 201, r.text
    page = open_page(stalling.url + "/nests/launch")
    expect(page.locator("#expectations")).to_contain_text("Nothing is owed right now.")
    r = stalling.post("/api/nests/launch/messages", {"author": "owner", "text": "@Hugin write the launch tweet", "kind": "request"})
    assert r.status_code == 201, r.text
    open_exp = page.locator("#expectations .expectation.status-open")
    expect(open_exp.first).to_contain_text("Hugin", timeout=30_000)
    expect(open_exp.first.locator(".exp-nudges")).to_have_text(re.compile(r"nudges [0-3]/3"))
    summary = page.locator(".msg.owner-summary")
    expect(summary).to_be_visible(timeout=60_000)
    expect(summary).to_contain_text("3/3 nudges")
    expect(page.locator("#messages .msg.kind-nudge")).to_have_count(3)
    screenshot(page, "nest-expectations-and-summary")


@pytest.fixture
def offline(live_server_factory):
    return live_server_factory(env={"CROWS_HEARTBEAT_S": "2"}).start()


def test_a_debate_shows_rounds_stances_and_the_verdict(offline, open_page) -> None:
    live_server = offline
    r = live_server.post("/api/nests", {"name": "Arena", "crows": ["Hugin", "Munin", "Pepper"]})
    assert r.status_code == 201, r.text
    page = open_page(live_server.url + "/nests/arena")
    r = live_server.post("/api/nests/arena/messages", {
        "author": "owner", "text": "@Hugin and @Munin, debate this: should we ship on Friday or Monday? Two rounds.",
    })
    assert r.status_code == 201, r.text
    debate = page.locator("#debates .debate")
    expect(debate.locator(".verdict")).to_contain_text("Verdict:", timeout=60_000)
    expect(debate.locator(".debate-round")).to_have_count(2)
    expect(debate.locator(".stances")).to_contain_text("Hugin: for Friday")
    expect(debate.locator(".finals li")).to_have_count(2)
    screenshot(page, "nest-debate")

    # Munin's page: the debate is in its memory, and Jev's scoring of picks is listed.
    r = live_server.post("/api/nests/arena/messages", {"author": "Boss", "text": "@Munin draft the release notes", "kind": "request"})
    assert r.status_code == 201, r.text
    crow = open_page(live_server.url + "/crows/Munin")
    expect(crow.locator("#crow-memory .memory").first).to_be_visible(timeout=30_000)
    expect(crow.locator("#crow-memory")).to_contain_text("arena")
    expect(crow.locator("#crow-orchestration table.orchestration tbody tr").first).to_contain_text("Boss")
    screenshot(crow, "crow-memory-and-orchestration")
