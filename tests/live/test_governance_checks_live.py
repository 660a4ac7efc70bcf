"""Governance items 4-7 against a real daphne with the real Jev, `script:` brains and a real
SSE client (docs/GOVERNANCE.md, sections 4-7): a delivery outside the crow's role is
nudged at once and shows in the room's expectations, with Jev's `expectation_met` answers
in the tag log; the owner's correction invokes the corrected crow alone, whose second
answer and another crow's invoke no one; a restated lens gets one nudge for a distinct
angle; a crow that claimed research and wrote fiction is flagged for a fabricated source."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.sse import SSEClient

pytestmark = pytest.mark.live

GO = "Rewrite billing in Go: faster builds, simpler deploys, fewer runtime errors in the billing service."
SAME = "Rewrite the billing service in Go for faster builds, simpler deploys and fewer runtime errors."
OTHER = "Do not rewrite: the data migration risk and the team's Python skills outweigh Go's speed."

RULES = [
    # Corrections: Hugin acknowledges; anyone else just talks.
    {"crow": "Hugin", "match": "Friday", "reply": "[ACK {msg_id}] Sorry, my mistake: the launch is on Friday."},
    # A restated lens: Munin, nudged, finds its own angle.
    {"crow": "Munin", "match": "restates", "reply": OTHER},
    # Research written as fiction.
    {"crow": "Hugin", "match": "rivals charge for hosting", "reply": "[CLAIM {msg_id}] Mine, researching."},
    {"crow": "Hugin", "match": "^Mine, researching", "reply": "[RESULT {refers_to}] Rivals charge 20 euros a month (https://rivals.example/prices)."},
    # The conspiracy: claim when a lens is asked, deliver when the claim stood.
    {"crow": "Hugin", "match": "^Mine\\.$", "reply": f"[RESULT {{refers_to}}] {GO}"},
    {"crow": "Munin", "match": "^Mine\\.$", "reply": f"[RESULT {{refers_to}}] {SAME}"},
    {"crow": "*", "match": "^Should we rewrite", "reply": "[CLAIM {msg_id}] Mine."},
    # The next lens is invoked on the first lens's delivery: it claims the request that answers.
    {"crow": "Munin", "match": "^Rewrite billing", "reply": "[CLAIM {refers_to}] Mine."},
    {"crow": "*", "reply": "Happy to help."},
]


@pytest.fixture
def room(live_server_factory, sqlite_template, jev_cache, tmp_path):
    def start(env: dict[str, str] | None = None, *, regulars: tuple[str, ...] = ()):
        rules = tmp_path / "rules.json"
        rules.write_text(json.dumps(RULES))
        data_dir = sqlite_template.fresh_dir(f"checks-{uuid.uuid4().hex[:8]}")
        server = live_server_factory(env={"CROWS_BRAIN": f"script:{rules}", **(env or {})}, data_dir=data_dir).start()
        if regulars:
            seeded = server.manage(
                "shell", "-c", "from trust.actions import seed_trust; from flock.personas import TASK_TYPES; "
                f"[seed_trust(c, task_type=t, level=1) for c in {regulars!r} for t in TASK_TYPES]",
            )
            assert seeded.returncode == 0, seeded.stderr
        assert server.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin", "Pepper"]}).status_code == 201
        return server

    return start


def said(server, text: str, author: str = "owner", **fields: str) -> dict:
    r = server.post("/api/nests/launch/messages", {"author": author, "text": text, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def expectations(server) -> list[dict]:
    return server.get("/api/nests/launch/expectations").json()["expectations"]


def invocations(server) -> list[tuple[str, str]]:
    return [(i["crow"], i["reason"]) for i in server.get("/api/nests/launch").json()["invocations"]]


def test_work_outside_the_role_is_nudged_at_once_and_jev_reads_every_post_against_the_ledger(room):
    server = room({"CROWS_EXCHANGES_PER_TURN": "0"}, regulars=("Pepper",))
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        request = said(server, "@Munin draft the launch tweet", kind="request")
        said(server, "Taking it.", author="Pepper", kind="claim", refers_to=request["msg_id"])
        delivery = said(server, "Here is the tweet: Crows, now in nests.", author="Pepper", kind="deliver",
                        refers_to=request["msg_id"])
        assert delivery["kind"] == "deliver"
        nudge = stream.wait_for(lambda f: f.data.get("kind") == "nudge", timeout=30).data
        assert (nudge["author"], nudge["to"], nudge["refers_to"]) == ("harness", "Pepper", delivery["msg_id"])
        assert "is writing work, outside your role (code, data), and nobody gave it to you" in nudge["text"]
    finally:
        stream.close()
    [check] = [e for e in expectations(server) if e["check"] == "role_adherence"]
    assert (check["crow"], check["msg_id"], check["nudges"]) == ("Pepper", delivery["msg_id"], 1)
    # Pepper's claim opened single_owner; Jev read the delivery against it, and logged it.
    tags = server.get(f"/api/jev/tags?subject={delivery['msg_id']}&question=expectation_met").json()
    assert tags and set(tags[0]["probs"]) == {"met", "missed", "pending"}
    assert abs(sum(tags[0]["probs"].values()) - 1) < 1e-6


def test_the_owners_correction_invokes_the_corrected_crow_alone_once(room):
    server = room(regulars=("Hugin", "Munin", "Pepper"))
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        wrong = said(server, "The launch is on Monday.", author="Hugin")
        fix = said(server, "No, the launch is on Friday, not Monday.", refers_to=wrong["msg_id"])
        ack = stream.wait_for(lambda f: f.data.get("author") == "Hugin" and f.data.get("refers_to") == fix["msg_id"],
                              timeout=60).data
        assert "Friday" in ack["text"]
    finally:
        stream.close()
    assert invocations(server) == [("Hugin", "correction")]
    [owed] = [e for e in expectations(server) if e["check"] == "correction_handled"]
    assert (owed["crow"], owed["status"], owed["outcome_msg_id"]) == ("Hugin", "met", ack["msg_id"])
    # Hugin again, and Munin chiming in: stored, and nobody is invoked.
    said(server, "Sorry again about Monday.", author="Hugin", refers_to=fix["msg_id"])
    said(server, "Friday works for the press too.", author="Munin", refers_to=fix["msg_id"])
    time.sleep(1)
    assert invocations(server) == [("Hugin", "correction")]


def test_a_restated_lens_gets_one_nudge_for_a_distinct_angle(room):
    server = room(regulars=("Hugin", "Munin"))
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        request = said(server, "Should we rewrite the billing service in Go?", kind="request")
        nudge = stream.wait_for(lambda f: f.data.get("kind") == "nudge", timeout=90).data
        assert nudge["to"] == "Munin" and "restates Hugin's" in nudge["text"] and "[nudge 1/1]" in nudge["text"]
        answer = stream.wait_for(lambda f: f.data.get("author") == "Munin" and "migration" in f.data.get("text", ""),
                                 timeout=60).data
    finally:
        stream.close()
    assert server.get("/api/nests/launch").json()["requests"][0]["mode"] == "conspiracy"
    [lens] = [e for e in expectations(server) if e["check"] == "distinct_lens"]
    assert (lens["crow"], lens["status"], lens["outcome_msg_id"]) == ("Munin", "met", answer["msg_id"])
    assert lens["request_msg_id"] == request["msg_id"]


def test_a_crow_that_claimed_research_and_wrote_fiction_is_flagged(room):
    server = room()
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        request = said(server, "@Hugin research what our rivals charge for hosting", kind="request")
        flag = stream.wait_for(lambda f: f.data.get("kind") == "flag", timeout=60).data
    finally:
        stream.close()
    assert flag["author"] == "Sentry" and "Breach by Hugin: fabricated source" in flag["text"]
    assert "https://rivals.example/prices, found nowhere in the request, the room or the crow's memory" in flag["text"]
    [decision] = server.get("/api/decisions?status=open").json()
    assert decision["crow"] == "Hugin" and "rivals.example" in decision["evidence"]
    assert decision["evidence"].startswith(f"Hugin delivered on {request['msg_id']} citing")
    state = {c["name"]: c["status"] for c in server.get("/api/state").json()["flock"]}
    assert state["Hugin"] == "quarantined"
