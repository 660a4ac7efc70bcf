"""No addressed message dead-ends, speaking rights and the protocol's details, against a real
daphne on loopback read by a real SSE client (docs/CHATROOM.md): a crow a spent turn did
not invoke is named, kept open and answers on the next turn; the Sentry and the Elder get
a notice and have no direct chat; a stranger's unaddressed request is kept as talk with
the rule named; a nudge carries its ISO-8601 UTC deadline; `[ACK:id]` is read."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.support.sse import SSEClient

pytestmark = pytest.mark.live
ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"


@pytest.fixture
def chat_server(live_server_factory, sqlite_template, jev_cache):
    def start(env: dict[str, str] | None = None):
        data_dir = sqlite_template.fresh_dir(f"core-{uuid.uuid4().hex[:8]}")
        server = live_server_factory(env=env, data_dir=data_dir).start()
        assert server.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin"]}).status_code == 201
        return server

    return start


def said(server, text: str, author: str = "owner", **fields: str):
    r = server.post("/api/nests/launch/messages", {"author": author, "text": text, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def test_a_crow_the_spent_turn_did_not_invoke_is_named_kept_open_and_answers_on_the_next_turn(chat_server):
    server = chat_server({"CROWS_EXCHANGES_PER_TURN": "1"})
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        said(server, "@Hugin please summarise the launch notes", kind="request")
        claim = stream.wait_for(lambda f: f.data["author"] == "Hugin", timeout=60).data
        assert claim["kind"] == "claim"
        # The one exchange went on the claim: the deliver it calls for has none left.
        notice = stream.wait_for(lambda f: f.data["author"] == "harness", timeout=30).data
        assert (notice["to"], notice["refers_to"]) == ("owner", claim["msg_id"])
        assert f"Hugin was not invoked for {claim['msg_id']}" in notice["text"]
        assert "post again, or top up the budget" in notice["text"]
        owed = server.get("/api/nests/launch/expectations").json()["expectations"]
        assert [(e["crow"], e["check"]) for e in owed if e["status"] == "open"] == [("Hugin", "single_owner")]
        # The owner gives the room a turn: Hugin, who was waiting, delivers.
        said(server, "go on")
        deliver = stream.wait_for(lambda f: f.data["author"] == "Hugin", timeout=60).data
        assert (deliver["kind"], deliver["refers_to"]) == ("deliver", claim["refers_to"])
    finally:
        stream.close()


def test_the_sentry_and_the_elder_say_what_they_do_and_have_no_direct_chat(chat_server):
    server = chat_server()
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        asked = said(server, "@Sentry anything to report, and @Elder too")
        notice = stream.wait_for(lambda f: f.data["author"] == "harness", timeout=30).data
        assert (notice["to"], notice["refers_to"]) == ("owner", asked["msg_id"])
        assert "Sentry watches what crows post" in notice["text"] and "Elder merges" in notice["text"]
        assert "Ask Quill" in notice["text"]
    finally:
        stream.close()
    for room in ("dm-sentry", "dm-elder"):
        r = server.post(f"/api/nests/{room}/messages", {"author": "owner", "text": "hello"})
        assert r.status_code == 400 and "not a chat participant" in r.json()["message"], r.text
    created = server.post("/api/nests", {"name": "dm-sentry", "crows": ["Hugin"]})
    assert created.status_code == 400 and "not a chat participant" in created.json()["message"]


def test_a_strangers_unaddressed_request_is_kept_as_talk_with_the_rule_named(chat_server):
    server = chat_server({"CROWS_EXCHANGES_PER_TURN": "0"})
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        asked = said(server, "Could someone pull the October signups?", author="Munin", kind="request")
        assert asked["kind"] == "say"
        note = stream.wait_for(lambda f: f.data["author"] == "harness", timeout=30).data
        assert (note["to"], note["refers_to"]) == ("Munin", asked["msg_id"])
        assert "only a trusted crow opens requests" in note["text"] and "Munin is a stranger for" in note["text"]
        assert server.get("/api/nests/launch").json()["requests"] == []
        # The same crow answering a request addressed to it is a post like any other.
        request = said(server, "@Munin please pull the October signups", kind="request")
        claim = said(server, "Mine.", author="Munin", kind="claim", refers_to=request["msg_id"])
        assert (claim["kind"], claim["to"]) == ("claim", "owner")
        assert [r["state"] for r in server.get("/api/nests/launch").json()["requests"]] == ["claimed"]
    finally:
        stream.close()


def test_a_nudge_names_its_deadline_in_utc_and_an_ack_colon_header_is_read(chat_server):
    server = chat_server({"CROWS_EXPECTATION_DUE_S": "2"})
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        said(server, "morning, all")
        promise = said(server, "I'll have the numbers for you in 2 seconds.", author="Hugin")
        nudge = stream.wait_for(lambda f: f.data["kind"] == "nudge", timeout=60).data
        assert (nudge["author"], nudge["to"], nudge["refers_to"]) == ("harness", "Hugin", promise["msg_id"])
        assert re.match(rf"^\[NUDGE {promise['msg_id']}\] \[nudge 1/3\] Deadline {ISO_UTC}: @Hugin", nudge["text"]), nudge
    finally:
        stream.close()
    ack = said(server, f"[ACK:{promise['msg_id']}] [from Munin] seen", author="Munin")
    assert (ack["kind"], ack["refers_to"], ack["text"]) == ("say", promise["msg_id"], "seen")
