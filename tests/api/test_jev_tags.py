"""GET /api/jev/tags: Jev's tag log over HTTP (docs/API.md, docs/JEV.md). Every posted
message's kind is one of its rows, with the probabilities the nest page shows on a
message's tag, for messages that arrive after the page opened too."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def post_owner(client, text: str) -> dict:
    response = client.post(
        "/api/nests/todo/messages", data=json.dumps({"author": "owner", "text": text}), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_posted_messages_kind_is_in_the_tag_log_with_its_probabilities(client):
    message = post_owner(client, "could someone draft the launch email for friday?")
    post_owner(client, "thanks, that is all for today")

    response = client.get(f"/api/jev/tags?subject={message['msg_id']}&question=kind")
    assert response.status_code == 200
    (tag,) = response.json()
    assert tag["subject"] == message["msg_id"] and tag["question"] == "kind"
    assert tag["text"] and tag["band"] in ("high", "unsure") and tag["source"] == "local"
    assert set(tag["probs"]) >= {"say", "request"} and abs(sum(tag["probs"].values()) - 1) < 0.01
    assert tag["choice"] == max(tag["probs"], key=tag["probs"].get) == tag["local_choice"]
    assert tag["outcome"]["kind"] == message["kind"]
    assert tag["version"] and tag["impl"] and tag["at"].endswith("Z")


def test_the_log_is_newest_first_and_limited(client):
    for n in range(3):
        post_owner(client, f"note number {n} for the record")
    kinds = client.get("/api/jev/tags?question=kind").json()
    subjects = [t["subject"] for t in kinds]
    assert subjects[:3] == ["todo-3", "todo-2", "todo-1"]
    assert len(client.get("/api/jev/tags?question=kind&limit=2").json()) == 2
    assert client.get("/api/jev/tags?subject=todo-99").json() == []


@pytest.mark.parametrize(
    "query, words",
    [
        ("limit=0", "limit must be a whole number from 1 to 200, got "),
        ("limit=201", "limit must be a whole number from 1 to 200, got "),
        ("subject=" + "s" * 101, "subject must be at most 100 characters"),
        ("question=" + "q" * 101, "question must be at most 100 characters"),
    ],
)
def test_a_query_out_of_bounds_is_a_400_naming_it(client, query, words):
    response = client.get(f"/api/jev/tags?{query}")
    assert response.status_code == 400
    assert response.json()["message"].startswith(words)
