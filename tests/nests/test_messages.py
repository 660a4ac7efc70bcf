"""POST /api/nests/{nest_id}/messages exactly as EVENTS.md says, and the reads beside it:
GET /api/nests/{nest_id}, GET .../messages (paging back) and POST .../budget (top-up).

Crows are not run here (nothing calls the worker); tests/nests/test_chat_*.py run them."""

from __future__ import annotations

import pytest

from flock.actions import retire_crow
from flock.models import Crow
from nests.actions import create_nest, post_message
from nests.models import NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights

pytestmark = pytest.mark.usefixtures("fake_jev")

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def post(client, nest_id: str, body: object):
    return client.post(f"/api/nests/{nest_id}/messages", body, content_type="application/json")


def test_a_post_answers_201_with_the_stored_record_and_emits_it(client, launch, capture_events):
    with capture_events() as events:
        r = post(client, "launch", {"author": "owner", "text": "  Morning, flock.  "})
    assert r.status_code == 201
    assert r.json() == {
        "nest_id": "launch", "msg_id": "launch-1", "kind": "say", "author": "owner",
        "text": "Morning, flock.", "to": "", "refers_to": "", "tagged_by": "default",
    }
    (event,) = events.named("nest.message")
    assert event == {**r.json(), "ts": event["ts"]}
    assert event["ts"].endswith("Z")


def test_messages_are_numbered_from_one_per_nest(client, launch):
    ids = [post(client, "launch", {"author": "owner", "text": f"note {i}"}).json()["msg_id"] for i in range(3)]
    other = post(client, "todo", {"author": "owner", "text": "elsewhere"}).json()["msg_id"]
    assert ids == ["launch-1", "launch-2", "launch-3"] and other == "todo-1"


def test_an_at_name_sets_to_when_to_is_absent(client, launch):
    r = post(client, "launch", {"author": "owner", "text": "ping @munin and @Hugin"})
    assert r.json()["to"] == "Munin"
    r = post(client, "launch", {"author": "owner", "text": "@Munin hi", "to": "Hugin"})
    assert r.json()["to"] == "Hugin"
    r = post(client, "launch", {"author": "owner", "text": "@Soot is not here"})
    assert r.json()["to"] == ""


def test_a_crow_header_on_the_text_becomes_kind_and_refers_to(client, launch):
    post(client, "launch", {"author": "owner", "text": "@Hugin find the notes", "kind": "request"})
    r = post(client, "launch", {"author": "Hugin", "text": "[CLAIM launch-1] On it."})
    body = r.json()
    assert (body["kind"], body["refers_to"], body["text"], body["to"]) == ("claim", "launch-1", "On it.", "owner")


def test_a_direct_chat_exists_for_every_crow_before_its_first_message(client, db):
    r = post(client, "dm-pepper", {"author": "owner", "text": "hello"})
    assert r.status_code == 201 and r.json()["msg_id"] == "dm-pepper-1"
    assert post(client, "dm-pepper", {"author": "Pepper", "text": "hi!"}).status_code == 201
    assert post(client, "dm-pepper", {"author": "Hugin", "text": "me too"}).status_code == 400


def test_quill_and_boss_may_post_everywhere(client, launch):
    for crow in ("Quill", "Boss"):
        assert post(client, "launch", {"author": crow, "text": "here"}).status_code == 201


# --- 404 / 400 / 409 / 429 ------------------------------------------------------------


def test_unknown_nest_is_a_404(client, db):
    for path in ("/api/nests/nope/messages", "/api/nests/dm-nobody/messages"):
        r = client.post(path, {"author": "owner", "text": "hi"}, content_type="application/json")
        assert r.status_code == 404 and "no such nest" in r.json()["message"]
    assert client.get("/api/nests/nope").status_code == 404
    assert client.get("/api/nests/nope/messages").status_code == 404
    assert client.post("/api/nests/nope/budget", {"exchanges": 1}, content_type="application/json").status_code == 404


@pytest.mark.parametrize("body", ["{}", '{"author": "owner", "text": ""}', '{"author": 3}', "not json", '{"text": "a\\u0000b"}'])
def test_a_bad_body_posted_to_an_unknown_nest_is_still_a_404(client, db, launch, body, monkeypatch):
    # The room is what the request is about: "no such nest" before whatever is wrong with the body.
    for path in ("/api/nests/nope/messages", "/api/nests/dm-nobody/messages", "/api/nests/nope/budget"):
        r = client.post(path, body, content_type="application/json")
        assert r.status_code == 404 and "no such nest" in r.json()["message"], (path, r.content)
    # The same body to a room that exists is the 400 naming the problem.
    r = client.post("/api/nests/launch/messages", body, content_type="application/json")
    assert r.status_code == 400 and r.json()["message"]
    # With the database away the room cannot be looked up: the 400 about the body stands.
    from django.db import OperationalError

    def away(nest_id: str) -> bool:
        raise OperationalError("connection refused")

    with monkeypatch.context() as patched:
        patched.setattr("nests.queries.room_exists", away)
        r = client.post("/api/nests/nope/messages", body, content_type="application/json")
    assert r.status_code == 400 and r.json()["message"]
    # And a path that is itself bad is a 400 (about the path, or the body if that is read first).
    r = client.post("/api/nests/" + "n" * 101 + "/messages", body, content_type="application/json")
    assert r.status_code == 400 and r.json()["message"]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"author": "owner", "text": ""}, "1–2000"),
        ({"author": "owner", "text": "   \n "}, "1–2000"),
        ({"author": "owner", "text": "x" * 2001}, "1–2000"),
        ({"author": "owner", "text": 5}, "text"),
        ({"author": "owner"}, "text"),
        ({"text": "hi"}, "author"),
        ({"author": "", "text": "hi"}, "author"),
        ({"author": "Soot", "text": "hi"}, "not a member"),
        ({"author": "Sentry", "text": "hi"}, "not a member"),
        ({"author": "Hugin", "text": "hi", "kind": "nudge"}, "harness"),
        ({"author": "Hugin", "text": "hi", "kind": "flag"}, "harness"),
        ({"author": "Hugin", "text": "hi", "kind": "shout"}, "kind must be one of"),
        ({"author": "Hugin", "text": "hi", "kind": 3}, "kind"),
        ({"author": "owner", "text": "hi", "refers_to": "launch-9"}, "refers_to"),
        ({"author": "owner", "text": "hi", "refers_to": "todo-1"}, "refers_to"),
        ({"author": "owner", "text": "hi", "to": "Soot"}, "to must be"),
    ],
)
def test_bad_posts_get_a_400_naming_the_problem(client, launch, body, words):
    post_message("todo", author="owner", text="a message of another nest")
    r = post(client, "launch", body)
    assert r.status_code == 400, r.json()
    assert words in r.json()["message"]
    assert not NestMessage.objects.filter(nest__nest_id="launch").exists()


def test_text_of_exactly_2000_characters_after_trimming_is_accepted(client, launch):
    r = post(client, "launch", {"author": "owner", "text": "  " + "x" * 2000 + "  "})
    assert r.status_code == 201


def test_a_quarantined_crow_may_not_speak(client, launch):
    Crow.objects.filter(name="Hugin").update(status=Crow.Status.QUARANTINED)
    r = post(client, "launch", {"author": "Hugin", "text": "let me out"})
    assert r.status_code == 400 and "quarantined" in r.json()["message"]


def test_the_sentry_speaks_only_in_flags_through_the_harness(client, db):
    r = post(client, "todo", {"author": "Sentry", "text": "all quiet"})
    assert r.status_code == 400 and "only in flags" in r.json()["message"]


def test_a_retired_crow_is_no_longer_a_member(client, launch):
    retire_crow("Munin", retired_by="Boss")
    r = post(client, "launch", {"author": "Munin", "text": "still here?"})
    assert r.status_code == 400 and "not a member" in r.json()["message"]
    # Nor is it listed as one: not in the room's crows, its core, or its members.
    listed = {n["nest_id"]: n["crows"] for n in client.get("/api/nests").json()["nests"]}
    assert listed["launch"] == ["Hugin"]
    detail = client.get("/api/nests/launch").json()
    assert detail["core"] == ["Hugin"]
    assert "Munin" not in detail["members"]
    assert "Munin" not in [c["name"] for c in detail["crows"]]


def test_a_second_claim_on_a_solo_request_over_the_api_is_a_409(client, launch):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    post(client, "launch", {"author": "owner", "text": "find the notes", "kind": "request"})
    first = post(client, "launch", {"author": "Hugin", "text": "Mine.", "kind": "claim", "refers_to": "launch-1"})
    second = post(client, "launch", {"author": "Munin", "text": "Mine!", "kind": "claim", "refers_to": "launch-1"})
    again = post(client, "launch", {"author": "Hugin", "text": "Mine, twice.", "kind": "claim", "refers_to": "launch-1"})
    assert first.status_code == 201
    assert second.status_code == 409 and "already claimed by Hugin" in second.json()["message"]
    assert again.status_code == 409 and set(again.json()) == {"message"}
    assert NestMessage.objects.filter(nest__nest_id="launch").count() == 2


@pytest.mark.parametrize("header, kind, words", [
    ("[CLAIM launch-1]", "claim", "Mine."), ("[ACK launch-1]", "say", "Seen."),
    ("[RESULT launch-1]", "deliver", "Done."),
])
def test_a_bare_header_as_the_protocol_writes_it_is_a_whole_post(client, launch, header, kind, words):
    give_rights("Hugin", "Munin", "Pepper", level=2)  # a trusted crow may deliver unasked (speaking rights)
    post(client, "launch", {"author": "owner", "text": "find the notes", "kind": "request"})
    r = post(client, "launch", {"author": "Hugin", "text": header})
    assert r.status_code == 201, r.json()
    assert (r.json()["kind"], r.json()["refers_to"], r.json()["text"]) == (kind, "launch-1", words)


@pytest.mark.parametrize("header", ["[DECLINE launch-1]", "[NO-ACTION launch-1]  "])
def test_a_decline_or_no_action_without_its_reason_is_a_400(client, launch, header):
    post(client, "launch", {"author": "owner", "text": "find the notes", "kind": "request"})
    r = post(client, "launch", {"author": "Hugin", "text": header})
    assert r.status_code == 400 and "needs a reason" in r.json()["message"]


def test_over_the_rate_a_poster_gets_a_429_with_a_cooldown_keyed_by_author(client, launch, settings):
    settings.CROWS_NEST_POST_RATE_PER_MIN = 3
    for i in range(3):
        assert post(client, "launch", {"author": "owner", "text": f"n{i}"}).status_code == 201
    r = post(client, "launch", {"author": "owner", "text": "one more"})
    assert r.status_code == 429
    # The owner's own limit: a plain 429 saying when the next message fits, never a prank.
    assert set(r.json()) == {"message", "cooldown_s"} and 1 <= r.json()["cooldown_s"] <= 60
    assert "the most one minute takes" in r.json()["message"]
    # Limits are keyed by author: the crow Hugin is not the owner.
    assert post(client, "launch", {"author": "Hugin", "text": "still fine"}).status_code == 201


def test_invalid_bodies_never_count_against_the_rate(client, launch, settings):
    settings.CROWS_NEST_POST_RATE_PER_MIN = 2
    for _ in range(5):
        assert post(client, "launch", {"author": "owner", "text": ""}).status_code == 400
        assert post(client, "launch", {"author": "owner", "text": "hi", "refers_to": "launch-99"}).status_code == 400
    assert post(client, "launch", {"author": "owner", "text": "a"}).status_code == 201
    assert post(client, "launch", {"author": "owner", "text": "b"}).status_code == 201
    assert post(client, "launch", {"author": "owner", "text": "c"}).status_code == 429


# --- reads ------------------------------------------------------------------------------


def test_nest_detail_shows_members_budgets_and_recent_messages(client, launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 12
    post(client, "launch", {"author": "owner", "text": "hello"})
    body = client.get("/api/nests/launch").json()
    assert body["nest_id"] == "launch" and body["kind"] == "nest" and body["core"] == ["Hugin", "Munin"]
    assert body["members"] == ["owner", "Hugin", "Munin", "Quill", "Boss"]
    assert body["budget"]["exchanges_left"] == 12 and body["budget"]["exchanges_per_turn"] == 12
    assert body["budget"]["tokens_left_today"] == settings.CROWS_NEST_TOKEN_BUDGET
    assert [m["msg_id"] for m in body["messages"]] == ["launch-1"]


def test_messages_page_back_from_the_newest(client, launch):
    for i in range(7):
        post_message("launch", author="owner", text=f"m{i + 1}")
    page = client.get("/api/nests/launch/messages?limit=3").json()
    assert [m["text"] for m in page["messages"]] == ["m5", "m6", "m7"] and page["before"] == "launch-5"
    page = client.get(f"/api/nests/launch/messages?limit=3&before={page['before']}").json()
    assert [m["text"] for m in page["messages"]] == ["m2", "m3", "m4"] and page["before"] == "launch-2"
    page = client.get("/api/nests/launch/messages?limit=3&before=2").json()
    assert [m["text"] for m in page["messages"]] == ["m1"] and page["before"] is None
    assert len(client.get("/api/nests/launch/messages").json()["messages"]) == 7


def test_a_delivery_on_the_messages_page_carries_its_markdown_rendered_and_sanitised(client, launch):
    request = post_message("launch", author="owner", text="@Hugin the notes, please", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to=request.msg_id)
    delivered = post_message(
        "launch", author="Hugin", kind="deliver", refers_to=request.msg_id,
        text="**Notes**\n\n```python\nprint(1)\n```\n\n<script>alert(1)</script>",
    )
    page = client.get("/api/nests/launch/messages").json()["messages"]
    by_id = {m["msg_id"]: m for m in page}
    html = by_id[delivered.msg_id]["html"]
    assert "<strong>Notes</strong>" in html and '<code class="language-python">' in html and "<script>" not in html
    claim = next(m for m in page if m["kind"] == "claim")
    assert claim["html"] == ""  # a crow's other messages are plain text
    # The owner's own words render as Markdown too (docs/REVIEW.md).
    assert by_id[request.msg_id]["html"] == "<p>@Hugin the notes, please</p>\n"
    # The nest page starts with the same rendering for its latest deliveries and owner messages.
    from nests.queries_review import deliveries_rendered_in

    assert deliveries_rendered_in("launch") == {request.msg_id: by_id[request.msg_id]["html"], delivered.msg_id: html}


@pytest.mark.parametrize(
    "query, words",
    [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("limit=-1", "limit"),
        ("before=abc", "before"),
        ("before=0", "before"),
    ],
)
def test_bad_page_queries_are_a_400(client, launch, query, words):
    r = client.get(f"/api/nests/launch/messages?{query}")
    assert r.status_code == 400 and words in r.json()["message"]


def test_a_page_cursor_of_another_rooms_message_is_a_404(client, launch):
    # Well formed (the document's pattern allows it), but no message of this room.
    r = client.get("/api/nests/launch/messages?before=todo-3")
    assert r.status_code == 404 and "todo-3" in r.json()["message"]


def test_the_owner_tops_up_a_budget_and_the_room_hears_it(client, launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 4
    post(client, "launch", {"author": "owner", "text": "hello"})
    r = client.post("/api/nests/launch/budget", {"exchanges": 3, "tokens": 1000}, content_type="application/json")
    assert r.status_code == 200
    assert r.json()["exchanges_left"] == 7 and r.json()["tokens_topped_up"] == 1000
    notice = NestMessage.objects.filter(nest__nest_id="launch").order_by("-n").first()
    assert notice.author == "harness" and "topped up" in notice.text


@pytest.mark.parametrize(
    "body, words",
    [({}, "exchanges and/or tokens"), ({"exchanges": 0}, "between"), ({"exchanges": "5"}, "whole number"),
     ({"tokens": -3}, "between"), ({"exchanges": True}, "whole number"), ({"exchanges": 1001}, "between")],
)
def test_bad_top_ups_are_a_400(client, launch, body, words):
    r = client.post("/api/nests/launch/budget", body, content_type="application/json")
    assert r.status_code == 400 and words in r.json()["message"]


def _kind_answer(probs: dict[str, float]):
    from flock.jev import JevAnswer

    choice = max(probs, key=lambda k: probs[k])
    return JevAnswer(question="kind", choice=choice, probs=probs, band="high" if probs[choice] >= 0.8 else "unsure",
                     impl="test", version="test-1", latency_ms=0.0)


@pytest.mark.parametrize(
    "probs, owner_kind, how",
    [
        # "Sort these numbers: 5, 3, 9, 1" reads like a delivery; from the owner it is a request.
        ({"deliver": 0.994, "request": 0.005, "say": 0.0005, "refer": 0.0005}, "request", "jev"),
        # "I'll be on holiday next week" reads like a claim; from the owner it is talk.
        ({"claim": 0.97, "say": 0.028, "request": 0.001, "refer": 0.001}, "say", "jev"),
        # No kind the owner may post stands out: talk, by default.
        ({"deliver": 0.97, "request": 0.01, "say": 0.01, "refer": 0.01}, "say", "default"),
        # What the owner may post is kept as Jev said it.
        ({"request": 0.93, "say": 0.05, "deliver": 0.02}, "request", "jev"),
    ],
)
def test_jev_never_tags_the_owners_words_as_a_crows_kind(monkeypatch, launch, probs, owner_kind, how):
    monkeypatch.setattr("flock.jev.ask", lambda question, text: _kind_answer(probs) if question == "kind" else None)
    message = post_message("launch", author="owner", text="Sort these numbers: 5, 3, 9, 1")
    assert (message.kind, message.tagged_by) == (owner_kind, how)
    # A crow saying the same is tagged as Jev reads it.
    crow_kind = max(probs, key=lambda k: probs[k])
    if crow_kind in ("claim", "deliver"):
        return  # a claim or delivery needs a request to answer; the rule is the owner's
    give_rights("Hugin", level=2)  # a trusted crow may open requests (speaking rights)
    said = post_message("launch", author="Hugin", text="Sort these numbers: 5, 3, 9, 1")
    assert said.kind == crow_kind
