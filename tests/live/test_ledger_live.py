"""The expectation ledger against a real daphne with a `script:` brain: a stalled claim is
nudged; the server goes down between nudges and, back up, goes on from the count and the
timer it stored, to 3/3 and the owner's summary, with no fourth nudge."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.support.waiting import wait_until

pytestmark = pytest.mark.live

STALLING = [
    {"crow": "Hugin", "match": "NUDGE", "reply": "Still on it."},
    {"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "reply": "Working on it."},
]


def nudge_counts(server) -> list[str]:
    messages = server.get("/api/nests/launch/messages?limit=200").json()["messages"]
    return [re.match(r"^\[NUDGE [\w-]+\] \[nudge (\d/3)\]", m["text"]).group(1) for m in messages if m["kind"] == "nudge"]


def test_a_restart_between_nudges_keeps_the_count_and_the_timer(live_server_factory, tmp_path):
    rules = tmp_path / "hugin.json"
    rules.write_text(json.dumps(STALLING))
    server = live_server_factory(env={"CROWS_BRAIN": f"script:{rules}", "CROWS_EXPECTATION_DUE_S": "3"}).start()
    assert server.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin"]}).status_code == 201
    r = server.post("/api/nests/launch/messages", {"author": "owner", "text": "@Hugin write the launch tweet", "kind": "request"})
    assert r.status_code == 201, r.text
    wait_until(lambda: nudge_counts(server) == ["1/3"])
    server.stop(hard=True)
    server.start()

    def summary():
        messages = server.get("/api/nests/launch/messages?limit=200").json()["messages"]
        return [m for m in messages if m["author"] == "harness" and m["text"].startswith("Owner summary")]

    wait_until(summary, timeout=90)
    assert nudge_counts(server) == ["1/3", "2/3", "3/3"]
    expectations = server.get("/api/nests/launch/expectations").json()["expectations"]
    claim = next(e for e in expectations if e["check"] == "single_owner")
    assert (claim["status"], claim["nudges"]) == ("escalated", 3)
    time.sleep(4)
    assert nudge_counts(server) == ["1/3", "2/3", "3/3"]
