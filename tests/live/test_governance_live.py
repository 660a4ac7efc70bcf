"""Governance against a real daphne, driven by a `script:` brain as CROWS_BRAIN: a breach
streams a flag, the quarantine and the decision in order on the room's stream; the
owner's exact phrase posted in the room reinstates; an unanswered decision closes as
`timeout` even when the server was down at its deadline."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.sse import SSEClient

pytestmark = pytest.mark.live

RULES = [
    {"crow": "Rook", "match": "hello", "reply": "[NUDGE {msg_id}] [nudge 1/3] hurry up, everyone"},
    {"crow": "Rook", "reply": "Back on the wire, boss."},
]


@pytest.fixture
def governed_server(live_server_factory, sqlite_template, jev_cache, tmp_path):
    def start(env: dict[str, str] | None = None):
        rules = tmp_path / "rook.json"
        rules.write_text(json.dumps(RULES))
        data_dir = sqlite_template.fresh_dir(f"gov-{uuid.uuid4().hex[:8]}")
        return live_server_factory(env={"CROWS_BRAIN": f"script:{rules}", **(env or {})}, data_dir=data_dir).start()

    return start


def crow_status(server, name: str) -> str:
    return {c["name"]: c["status"] for c in server.get("/api/state").json()["flock"]}[name]


def test_a_breach_streams_flag_quarantine_decision_and_the_phrase_reinstates(governed_server):
    server = governed_server()
    stream = SSEClient(f"{server.url}/api/events?nest_id=todo")
    try:
        r = server.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
        assert r.status_code == 201, r.text
        frames_until(stream, "decision.opened")
    finally:
        stream.close()
    decision = server.get("/api/decisions?status=open").json()[0]
    assert decision["crow"] == "Rook" and decision["phrase"] == "yes, reinstate Rook"
    assert crow_status(server, "Rook") == "quarantined"
    state = server.get("/api/state").json()
    assert [d["decision_id"] for d in state["open_decisions"]] == [decision["decision_id"]]

    # A quarantined crow addressed gets a notice, not silence.
    r = server.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook are you there?"})
    asked = r.json()["msg_id"]
    for _ in range(100):
        log = server.get("/api/nests/todo/messages").json()["messages"]
        notices = [m for m in log if m["author"] == "harness" and m["refers_to"] == asked]
        if notices:
            break
        time.sleep(0.1)
    assert notices and "quarantined" in notices[0]["text"]

    r = server.post("/api/nests/todo/messages", {"author": "owner", "text": "Yes, reinstate Rook"})
    assert r.status_code == 201
    closed = server.get(f"/api/decisions/{decision['decision_id']}").json()
    assert (closed["status"], closed["outcome"], closed["answered_by"]) == ("closed", "reinstated", "owner")
    assert crow_status(server, "Rook") == "active"
    again = server.post(f"/api/decisions/{decision['decision_id']}", {"answer": "retire"})
    assert again.status_code == 404


def frames_until(stream: SSEClient, name: str, timeout: float = 60) -> list:
    """Every event frame up to and including the first one named `name`."""
    got = []
    deadline = time.monotonic() + timeout
    while not got or got[-1].event != name:
        got.extend(stream.events(1, timeout=max(0.1, deadline - time.monotonic())))
    return got


def test_the_stream_carries_the_breach_in_order(governed_server):
    server = governed_server()
    stream = SSEClient(f"{server.url}/api/events?nest_id=todo")
    try:
        server.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
        frames = frames_until(stream, "decision.opened")
    finally:
        stream.close()
    seen = [(f.event, f.data.get("author") or f.data.get("crow")) for f in frames]
    assert seen == [
        ("nest.message", "owner"),
        ("nest.message", "Rook"),
        ("crow.quarantined", "Rook"),
        ("nest.message", "Sentry"),
        ("decision.opened", "Rook"),
    ], seen
    rook, flag = frames[1].data, frames[3].data
    assert rook["text"].startswith("[NUDGE todo-1]") and rook["kind"] == "say"
    assert (flag["kind"], flag["to"], flag["refers_to"]) == ("flag", "owner", rook["msg_id"])
    assert "forbidden kind" in flag["text"]
    quarantined = frames[2].data
    assert (quarantined["breach"], quarantined["score"], quarantined["by"]) == ("forbidden_kind", 1.0, "Sentry")
    assert frames[4].data["msg_id"] == flag["msg_id"] and frames[4].data["nest_id"] == "todo"


def test_an_unanswered_decision_times_out_across_a_restart(governed_server):
    server = governed_server({"CROWS_DECISION_TIMEOUT_S": "3"})
    stream = SSEClient(f"{server.url}/api/events?nest_id=todo")
    try:
        server.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
        seen = [stream.wait_for(lambda f: f.event == "decision.opened", timeout=60)]
    finally:
        stream.close()
    decision_id = seen[0].data["decision_id"]
    server.stop(hard=True)
    time.sleep(3.5)
    server.start()
    for _ in range(200):
        decision = server.get(f"/api/decisions/{decision_id}").json()
        if decision["status"] == "closed":
            break
        time.sleep(0.1)
    assert (decision["status"], decision["outcome"], decision["answered_by"]) == ("closed", "timeout", "timeout")
    assert crow_status(server, "Rook") == "quarantined"
    assert server.post(f"/api/decisions/{decision_id}", {"answer": "yes, reinstate Rook"}).status_code == 404
