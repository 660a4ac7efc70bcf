"""Rules the OpenAPI document states instead of leaving to a 400 a schema-valid request
could still get (docs/API.md): a top-up adds something, a brain spec names its script, a
verdict's extensions go together, every limit has its range, every path and query string
its length; and the answers to what lies outside them, in the API's words."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import jsonschema_rs
import pytest
from asgiref.testing import ApplicationCommunicator

from tests.support.asgi import http_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def components(client) -> dict[str, Any]:
    return client.get("/api/openapi.json").json()["components"]["schemas"]


def valid(schema: dict[str, Any], body: dict[str, Any]) -> bool:
    return jsonschema_rs.Draft202012Validator(schema).is_valid(body)


def post(client, path: str, body: dict[str, Any]):
    return client.post(path, data=json.dumps(body), content_type="application/json")


# --- a top-up adds something ---------------------------------------------------------------


@pytest.mark.parametrize("body", [{}, {"exchanges": None}, {"exchanges": None, "tokens": None}, {"tokens": 0}])
def test_a_top_up_that_adds_nothing_is_outside_the_document_and_refused(client, components, body):
    assert not valid(components["BudgetIn"], body)
    response = post(client, "/api/nests/todo/budget", body)
    assert response.status_code == 400 and "message" in response.json()


@pytest.mark.parametrize("body", [{"exchanges": 1}, {"tokens": 5}, {"exchanges": None, "tokens": 5}])
def test_a_top_up_the_document_allows_is_taken(client, components, body):
    assert valid(components["BudgetIn"], body)
    assert post(client, "/api/nests/todo/budget", body).status_code == 200


# --- Test connection: a spec names its script, one brain at a time, living crows only -----


@pytest.mark.parametrize(
    "body", [{"model": "script"}, {"model": "script:"}, {"crow": "Rook", "model": "mock"}, {"model": "sc ript:x"}]
)
def test_a_brain_test_the_server_refuses_for_its_shape_is_outside_the_document(client, components, body):
    assert not valid(components["BrainTestIn"], body)
    assert post(client, "/api/brains/test", body).status_code == 400


@pytest.mark.parametrize(
    "body", [{}, {"model": "mock"}, {"model": "mock:tiny"}, {"crow": "Rook"}, {"crow": "", "model": "mock"},
             {"crow": None, "model": "mock"}, {"model": ""}],
)
def test_a_brain_test_the_document_allows_is_answered(client, components, body, settings):
    settings.CROWS_BRAIN = "mock"
    assert valid(components["BrainTestIn"], body)
    assert post(client, "/api/brains/test", body).status_code == 200


def test_the_documented_brain_spec_is_one_the_actions_take():
    from flock.actions import MODEL_SPEC_RE
    from flock.schemas import model_spec_pattern

    document = re.compile(model_spec_pattern(blank=False))
    for spec in ["mock", "mock:x", "openai:llama3.1:8b", "anthropic:claude-x", "script:demo/rook.json",
                 "script", "script:", "openai", "anthropic:", "scripted:x", "mock x", ""]:
        assert bool(document.fullmatch(spec)) == bool(MODEL_SPEC_RE.fullmatch(spec)), spec
    for bare in ["script", "openai", "anthropic"]:  # a provider names no brain without its model
        assert not document.fullmatch(bare) and not MODEL_SPEC_RE.fullmatch(bare)
    assert document.fullmatch("script:demo/rook.json") and document.fullmatch("mock")


def test_testing_a_retired_crows_brain_is_a_404_as_for_no_such_crow(client):
    from flock.models import Crow

    Crow.objects.filter(name="Rook").update(status=Crow.Status.RETIRED)
    response = post(client, "/api/brains/test", {"crow": "rook"})
    assert response.status_code == 404
    assert response.json() == {"message": "Rook is retired: it has no brain to test"}
    assert post(client, "/api/brains/test", {"crow": "Nobody"}).status_code == 404


# --- a verdict's extensions go together ------------------------------------------------------


@pytest.mark.parametrize(
    "body, refusal",
    [
        ({"approve": False, "edited_text": "", "item_id": "0", "target": "output"}, "edited_text"),
        ({"approve": False, "edited_text": "fixed", "item_id": "0", "target": "output"}, "edited_text"),
        ({"approve": True, "edited_text": "fixed", "item_id": "0", "target": "triage"}, "edited_text"),
        ({"approve": True, "edited_text": " \x1f ", "item_id": "0", "target": "output"}, "edited_text"),
        ({"approve": True, "overrule": True, "item_id": "0", "target": "output"}, "overrule"),
        ({"approve": False, "overrule": True, "item_id": "0", "target": "triage"}, "overrule"),
        ({"approve": False, "overrule": True, "edited_text": "x", "item_id": "0", "target": "output"}, "overrule"),
        ({"approve": True, "reason": "r" * 2001, "item_id": "0", "target": "output"}, "reason"),
    ],
)
def test_a_verdict_the_server_refuses_for_its_shape_is_outside_the_document(client, components, body, refusal):
    assert not valid(components["VerdictIn"], body)
    response = post(client, "/api/verdicts", body)
    assert response.status_code == 400 and refusal in response.json()["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"approve": True, "edited_text": "fixed", "item_id": "0", "target": "output"},
        {"approve": False, "overrule": True, "item_id": "0", "target": "output"},
        {"approve": False, "overrule": False, "reason": "no", "item_id": "0", "target": "triage"},
        {"approve": False, "edited_text": None, "overrule": None, "item_id": "0", "target": "output"},
    ],
)
def test_a_verdict_the_document_allows_gets_past_its_shape(client, components, body):
    assert valid(components["VerdictIn"], body)
    # Nothing waits on item 0: the answer is about the state, not the shape.
    assert post(client, "/api/verdicts", body).status_code == 404


def test_text_that_is_only_spaces_by_strs_reckoning_is_outside_the_document(client, components):
    answer = components["DecisionAnswerIn"]
    for blank in ["\x1f", " \x1c\x85 ", "\u3000"]:
        assert not valid(answer, {"answer": blank}), repr(blank)
    assert valid(answer, {"answer": "retire"})
    retry = components["RetryIn"]
    assert not valid(retry, {"note": "a\x00b"}) and valid(retry, {"note": "again"})


# --- every limit has its range, every string its length ---------------------------------------


@pytest.mark.parametrize("value", ["0", "-5", "201", "99999999999999999999999", "abc", "1.5", "%C2%B2"])
def test_a_flights_limit_out_of_range_is_a_400_naming_it(client, value):
    response = client.get(f"/api/flights?limit={value}")
    assert response.status_code == 400
    assert response.json()["message"].startswith("limit must be a whole number from 1 to 200, got ")


def test_a_flights_limit_in_range_is_taken_and_documented(client):
    assert client.get("/api/flights?limit=1").status_code == 200
    assert client.get("/api/flights?limit=200").status_code == 200
    document = client.get("/api/openapi.json").json()
    (limit,) = [p for p in document["paths"]["/api/flights"]["get"]["parameters"] if p["name"] == "limit"]
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 200)


@pytest.mark.parametrize(
    "path, words",
    [
        ("/api/crows/Rook/memory?limit=%C2%B2", "limit must be a whole number from 1 to 200"),
        ("/api/crows/Rook/memory?limit=0", "limit must be a whole number from 1 to 200"),
        ("/api/orchestration?limit=%C2%B2", "limit must be a whole number from 1 to 1000"),
        ("/api/orchestration?limit=1001", "limit must be a whole number from 1 to 1000"),
        ("/api/crows/Rook/memory?q=" + "q" * 501, "q must be at most 500 characters"),
        ("/api/crows/" + "R" * 101 + "/memory", "name must be at most 100 characters"),
        ("/api/flights?crow=" + "c" * 101, "crow must be at most 100 characters"),
        ("/api/decisions?status=maybe", "status must be 'open' or 'closed'"),
    ],
)
def test_a_parameter_out_of_its_documented_bounds_is_a_400_in_the_apis_words(client, path, words):
    response = client.get(path)
    assert response.status_code == 400
    assert response.json() == {"message": words} or response.json()["message"].startswith(words + ", got ")


def test_a_memory_query_at_its_documented_length_is_answered(client):
    assert client.get("/api/crows/Rook/memory?q=" + "\U00010000" * 500).status_code == 200


# --- the event stream's cursor ---------------------------------------------------------------


async def _stream_answer(query: bytes) -> tuple[int, dict]:
    from flock.stream import consumer

    app = ApplicationCommunicator(consumer.EventStreamConsumer.as_asgi(), http_scope("/api/events", query))
    await app.send_input({"type": "http.request", "body": b""})
    start = await app.receive_output(5)
    body = await app.receive_output(5)
    await app.wait(5)
    return int(start["status"]), json.loads(body["body"])


@pytest.mark.parametrize(
    "cursor",
    [b"9223372036854775808", b"99999999999999999999999", b"9" * 5000, b"0" * 5000 + b"9" * 20, b"%C2%B2"],
)
def test_a_cursor_no_64_bit_event_id_can_reach_is_a_400(cursor):
    status, body = asyncio.run(_stream_answer(b"since=" + cursor))
    assert status == 400
    assert "cursor" in body["message"]


def test_the_cursors_range_is_documented(client):
    document = client.get("/api/openapi.json").json()
    for parameter in document["paths"]["/api/events"]["get"]["parameters"]:
        if parameter["name"] in ("since", "Last-Event-ID"):
            assert parameter["schema"]["maximum"] == 2**63 - 1


# --- every body takes only its own fields -----------------------------------------------------

# One body of each request schema that is good but for its extra field, with where it goes.
BODIES = {
    "CrowPatchIn": ("patch", "/api/crows/Rook", {"epithet": "the bold"}),
    "BrainTestIn": ("post", "/api/brains/test", {"model": "mock"}),
    "ListIn": ("post", "/api/lists", {"text": "one thing", "requester": "ann"}),
    "VerdictIn": ("post", "/api/verdicts", {"item_id": "L1-1", "target": "triage", "approve": True}),
    "RetryIn": ("post", "/api/items/L1-1/retry", {"note": "again"}),
    "DecisionAnswerIn": ("post", "/api/decisions/D1", {"answer": "retire"}),
    "ReinstateIn": ("post", "/api/crows/Rook/reinstate", {}),
    "NestIn": ("post", "/api/nests", {"name": "Ops", "crows": ["Rook"]}),
    "MessageIn": ("post", "/api/nests/todo/messages", {"author": "owner", "text": "hi"}),
    "BudgetIn": ("post", "/api/nests/todo/budget", {"exchanges": 1}),
    "NestMembersIn": ("post", "/api/nests/todo/members", {"add": ["Hugin"]}),
}


def test_every_request_body_the_document_lists_forbids_unknown_fields(components):
    bodies = {name for name, schema in components.items() if name.endswith("In")}
    assert bodies == set(BODIES)
    for name in bodies:
        assert components[name]["additionalProperties"] is False, name


@pytest.mark.parametrize("schema", sorted(BODIES))
def test_an_unknown_field_is_a_400_naming_it_and_nothing_is_written(client, components, schema):
    from flock.models import Event

    method, path, good = BODIES[schema]
    body = {**good, "colour": "blue"}
    assert not valid(components[schema], body)
    before = Event.objects.count()
    response = getattr(client, method)(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    message = response.json()["message"]
    assert message.startswith("unknown field 'colour': this body takes "), message
    for field in components[schema].get("properties", {}):
        assert field in message
    assert Event.objects.count() == before


def test_several_unknown_fields_are_named_together(client):
    response = post(client, "/api/nests/todo/messages", {"author": "owner", "text": "hi", "tone": 1, "mood": 2})
    assert response.status_code == 400
    assert response.json()["message"] == (
        "unknown fields 'tone', 'mood': this body takes author, text, to, kind, refers_to"
    )


# --- what the flock's state decides is not a 400 the document allows ---------------------------


def test_the_roster_is_the_enum_of_a_nests_crows(client, components):
    from flock.queries import roster_names

    crows = components["NestIn"]["properties"]["crows"]
    assert crows["items"]["enum"] == roster_names() and "Sentry" not in roster_names()
    assert not valid(components["NestIn"], {"name": "Ops", "crows": ["Sentry"]})
    assert post(client, "/api/nests", {"name": "Ops", "crows": ["Sentry"]}).status_code == 400
    assert valid(components["NestIn"], {"name": "Ops", "crows": ["Rook"]})
    assert post(client, "/api/nests", {"name": "Ops", "crows": ["Rook"]}).status_code == 201


def test_a_page_cursor_of_another_rooms_message_is_a_404_and_a_misshapen_one_a_400(client):
    from nests.actions import post_message

    post_message("todo", author="owner", text="one")
    post_message("todo", author="owner", text="two")
    assert client.get("/api/nests/todo/messages?before=todo-2").json()["messages"][-1]["text"] == "one"
    other = client.get("/api/nests/todo/messages?before=launch-2")
    assert other.status_code == 404
    assert other.json()["message"] == "todo has no message 'launch-2': before is a msg_id of this nest"
    # What the documented pattern refuses, the server refuses: no spaces, signs or other digits.
    for shape in [" 2", "2 ", "+2", "02", "\u0662", "todo-02", "Todo-2"]:
        response = client.get("/api/nests/todo/messages", {"before": shape})
        assert response.status_code == 400 and response.json()["message"].startswith("before must be"), shape
    for limit in [" 5", "5 ", "\u0665", "+5"]:
        response = client.get("/api/nests/todo/messages", {"limit": limit})
        assert response.status_code == 400 and response.json()["message"].startswith("limit must be"), limit


def test_reinstating_a_crow_that_is_not_quarantined_is_a_409(client):
    response = post(client, "/api/crows/Quill/reinstate", {})
    assert response.status_code == 409
    assert response.json() == {"message": "Quill is active, not quarantined"}


@pytest.mark.parametrize("name, taken", [("Éé", False), ("①②", False), ("Café", True), ("Été", True), (" 7 ", True)])
def test_a_nest_name_is_taken_exactly_when_the_document_allows_it(client, components, name, taken):
    body = {"name": name, "crows": ["Rook"]}
    assert valid(components["NestIn"], body) is taken
    response = post(client, "/api/nests", body)
    assert response.status_code == (201 if taken else 400), response.content
    if not taken:
        assert response.json()["message"].startswith("name must contain at least one Latin letter or digit")
