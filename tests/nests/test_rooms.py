"""Nests: GET/POST /api/nests with every guardrail in EVENTS.md."""

from __future__ import annotations

import pytest

from nests.actions import create_nest


def post(client, body):
    return client.post("/api/nests", body, content_type="application/json")


def test_a_fresh_database_holds_the_todo_nest_and_the_roster(client, db):
    body = client.get("/api/nests").json()
    assert body["roster"] == ["Quill", "Boss", "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook"]
    assert body["nests"] == [{"nest_id": "todo", "name": "todo", "crows": []}]


def test_creating_a_nest_answers_201_and_emits_nest_created(client, db, capture_events):
    with capture_events() as events:
        r = post(client, {"name": "  Launch copy ", "crows": ["Pepper", "Inky"]})
    assert r.status_code == 201
    assert r.json() == {"nest_id": "launch-copy", "name": "Launch copy", "crows": ["Pepper", "Inky"]}
    assert events.names() == ["nest.created"]
    payload = events.named("nest.created")[0]
    assert payload["nest_id"] == "launch-copy" and payload["crows"] == ["Pepper", "Inky"] and payload["ts"]
    assert "launch-copy" in [n["nest_id"] for n in client.get("/api/nests").json()["nests"]]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"name": "", "crows": ["Pepper"]}, "name"),
        ({"name": "   ", "crows": ["Pepper"]}, "name"),
        ({"name": "x" * 41, "crows": ["Pepper"]}, "1–40"),
        ({"name": 7, "crows": ["Pepper"]}, "name"),
        ({"crows": ["Pepper"]}, "name"),
        ({"name": "!!!", "crows": ["Pepper"]}, "letter"),
        ({"name": "日本語", "crows": ["Pepper"]}, "a-z, 0-9 and -"),
        ({"name": "Ops", "crows": []}, "1–8"),
        ({"name": "Ops", "crows": ["Pepper"] * 9}, "1–8"),
        ({"name": "Ops", "crows": ["Pepper", "Pepper"]}, "repeat"),
        ({"name": "Ops", "crows": ["Sentry"]}, "roster"),
        ({"name": "Ops", "crows": ["Elder"]}, "roster"),
        ({"name": "Ops", "crows": ["Nobody"]}, "roster"),
        ({"name": "Ops", "crows": "Pepper"}, "list"),
        ({"name": "Ops"}, "list"),
    ],
)
def test_bad_nests_get_a_400_naming_the_problem(client, db, body, words):
    r = post(client, body)
    assert r.status_code == 400
    assert words in r.json()["message"]


def test_a_nest_id_folds_accents_as_a_slug_does(client, db):
    r = post(client, {"name": "Café  Crew — Zürich", "crows": ["Pepper"]})
    assert r.status_code == 201 and r.json()["nest_id"] == "cafe-crew-zurich"
    # Folding can lengthen a name ("㎯" is "mm/s2"): the id stays within a name's 40.
    r = post(client, {"name": "a" + "㎯" * 39, "crows": ["Pepper"]})
    assert r.status_code == 201 and len(r.json()["nest_id"]) <= 40 and not r.json()["nest_id"].endswith("-")


def test_a_clashing_nest_id_is_a_409(client, db):
    assert post(client, {"name": "Launch copy", "crows": ["Pepper"]}).status_code == 201
    r = post(client, {"name": "launch COPY!", "crows": ["Inky"]})
    assert r.status_code == 409 and "launch-copy" in r.json()["message"]
    assert post(client, {"name": "todo", "crows": ["Inky"]}).status_code == 409


def test_the_flock_keeps_at_most_twenty_nests(client, db):
    for n in range(19):  # todo is the first of the twenty
        create_nest(f"Nest {n}", crows=["Pepper"])
    r = post(client, {"name": "One too many", "crows": ["Pepper"]})
    assert r.status_code == 400 and "20" in r.json()["message"]
    assert len(client.get("/api/nests").json()["nests"]) == 20


def test_malformed_json_is_a_400(client, db):
    r = client.post("/api/nests", "{not json", content_type="application/json")
    assert r.status_code == 400 and "JSON" in r.json()["message"]


def test_unknown_api_paths_answer_json_404(client, db):
    r = client.get("/api/no-such-thing")
    assert r.status_code == 404 and "no such endpoint" in r.json()["message"]


def test_crows_lists_all_ten_with_their_personas(client, db):
    crows = client.get("/api/crows").json()
    assert [c["name"] for c in crows] == [
        "Quill", "Boss", "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook", "Sentry", "Elder",
    ]
    for crow in crows:
        assert crow["epithet"] and crow["strength"] and crow["backstory"]


def test_state_lists_protocol_capabilities_and_a_snapshot(client, db):
    state = client.get("/api/state").json()
    assert state["protocol"] == "crows/1"
    assert {"nest.message", "nest.created", "crow.hatched", "crow.retired"} <= set(state["capabilities"])
    assert len(state["flock"]) == 10
