"""The owner's desk (docs/REVIEW.md): rejection reasons, retries with a note, edited
approvals, overruling an auto-approved answer, editing a crow from the page, and the
brain connection test. State is built by calling actions; events are asserted."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from flock import worker
from flock.actions import update_crow
from flock.errors import BadInput, Conflict, NotFound
from flock.models import Crow, Flight
from nests.actions.lists import retry_item
from nests.models import Item, TodoList
from nests.queries_lists import list_state
from tests.nests.test_lists_support import (
    approve,
    let_approvals_time_out,
    named,
    run_list,
    stream,
    trust_everyone,
)
from trust.actions import overrule_verdict, record_owner_verdict, seed_trust
from trust.models import Verdict
from trust.queries import trust_balance

pytestmark = pytest.mark.django_db

SOLO = "write a haiku about crows"


def _post(client: Client, path: str, body: dict) -> tuple[int, dict]:
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response.status_code, (response.json() if response.content else {})


# --- reject with a reason --------------------------------------------------------------


def test_a_rejection_keeps_the_owners_reason_and_says_it_on_the_stream(capture_events):
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    with capture_events() as events:
        record_owner_verdict(item_id, target="triage", approve=False, reason="  Too vague: name the season.  ")
    (verdict,) = events.named("verdict")
    assert verdict["verdict"] == "rejected" and verdict["reason"] == "Too vague: name the season."
    assert Verdict.objects.get(item_id=item_id).reason == "Too vague: name the season."
    (item,) = list_state(todo.list_id)["items"]
    assert item["verdicts"][0]["reason"] == "Too vague: name the season."
    assert item["skip_reason"] == "triage rejected"


def test_a_verdict_without_a_reason_carries_no_reason_field(capture_events):
    todo = run_list(SOLO)
    with capture_events() as events:
        record_owner_verdict(f"{todo.list_id}-1", target="triage", approve=True)
    assert "reason" not in events.named("verdict")[0]


@pytest.mark.parametrize(
    "extra, words",
    [
        ({"reason": 5}, "reason must be a string"),
        ({"reason": "x" * 2001}, "reason is 2,001 characters long"),
        ({"edited_text": "fixed", "target": "triage"}, "edited_text corrects an answer"),
        ({"edited_text": "fixed", "approve": False}, "send it with approve true"),
        ({"edited_text": "   "}, "edited_text is empty"),
        ({"edited_text": 3}, "edited_text must be a string"),
        ({"overrule": "yes"}, "overrule must be true or false"),
        ({"overrule": True, "approve": True}, "an overrule is a rejection"),
    ],
)
def test_bad_review_fields_are_a_400_with_a_message_and_change_nothing(extra, words):
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    approve(item_id, "triage")
    body = {"item_id": item_id, "target": "output", "approve": True, **extra}
    status, answer = _post(Client(), "/api/verdicts", body)
    assert status == 400 and words in answer["message"]
    assert not Verdict.objects.filter(item_id=item_id, target="output").exists()


# --- retry -----------------------------------------------------------------------------


def test_a_rejected_item_flies_again_with_the_note_in_every_crews_prompt(capture_events):
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    approve(item_id, "triage")
    approve(item_id, "output", yes=False)
    assert TodoList.objects.get(pk=todo.pk).status == "finished"

    with capture_events() as events:
        item = retry_item(item_id, note="Use a winter image, please.")
    (retried,) = events.named("item.retried")
    assert retried == {
        **retried, "item_id": item_id, "attempt": 2, "note": "Use a winter image, please.",
        "previous": "output rejected", "reopened": True, "list_id": todo.list_id,
    }
    assert item.attempt == 2 and item.stage == Item.Stage.TRIAGE
    worker.run_pending()
    approve(item_id, "triage")
    approve(item_id, "output")

    events = stream(todo.list_id)
    verdicts = [(p["target"], p["verdict"], p.get("attempt", 1)) for p in named(events, "verdict")]
    assert verdicts == [
        ("triage", "approved", 1), ("output", "rejected", 1), ("triage", "approved", 2), ("output", "approved", 2),
    ]
    assert [n for n, _ in events].count("list.finished") == 2 and [n for n, _ in events][-1] == "list.finished"
    state = list_state(todo.list_id)
    assert state["status"] == "finished" and state["items"][0]["stage"] == "answered"
    assert state["items"][0]["attempt"] == 2 and state["items"][0]["owner_note"] == "Use a winter image, please."
    prompts = Flight.objects.filter(item_id=item_id).order_by("id")
    first, second = [f for f in prompts if "winter" not in f.prompt], [f for f in prompts if "winter" in f.prompt]
    assert first and second  # the note is only in the second attempt's prompts
    assert {f.crow for f in second} >= {"Sentry"} and len(second) >= 2


def test_a_timed_out_item_can_be_retried_over_http_and_bad_retries_are_refused():
    client = Client()
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    status, body = _post(client, f"/api/items/{item_id}/retry", {"note": "again"})
    assert status == 409 and "still under way" in body["message"]
    let_approvals_time_out()
    assert _post(client, f"/api/items/{item_id}/retry", {"note": 5}) == (400, {"message": "note must be a string, got int"})
    assert _post(client, "/api/items/L0000000-9/retry", {"note": "x"})[0] == 404
    status, body = _post(client, f"/api/items/{item_id}/retry", {"note": "try once more"})
    assert status == 202 and body == {"item_id": item_id, "list_id": todo.list_id, "attempt": 2}


def test_an_answered_item_is_retried_only_after_an_overrule():
    trust_everyone()
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    with pytest.raises(Conflict, match="overrule the answer first"):
        retry_item(item_id, note="no")
    overrule_verdict(item_id, reason="wrong")
    assert retry_item(item_id, note="better").attempt == 2


def test_a_retry_answered_by_a_real_brain_is_not_badged_mock_for_the_first_attempt(settings, tmp_path):
    from nests.queries_review import mock_answered

    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    approve(item_id, "triage")
    assert mock_answered([item_id]) == {item_id}
    approve(item_id, "output", yes=False)
    # The second attempt's answer comes from another brain (a script stands in for a model).
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"crow": "*", "task": "answer", "match": "", "reply": "A real answer."}]))
    settings.CROWS_BRAIN = f"script:{rules}"
    retry_item(item_id, note="again, for real")
    worker.run_pending()
    approve(item_id, "triage")
    assert list_state(todo.list_id)["items"][0]["answer"] == "A real answer."
    assert mock_answered([item_id]) == set()
    assert list_state(todo.list_id)["items"][0]["mock"] is False


# --- edited approval -------------------------------------------------------------------


def test_an_edited_approval_keeps_both_texts_answers_the_item_and_leaves_the_streak(capture_events, settings):
    settings.CROWS_TRUST_STREAK = 3
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    approve(item_id, "triage")
    original = Item.objects.get(item_id=item_id).answer
    crow = Item.objects.get(item_id=item_id).crows[0]
    task_type = Item.objects.get(item_id=item_id).task_type
    before = trust_balance(crow, task_type)
    with capture_events() as events:
        status, _ = _post(Client(), "/api/verdicts", {
            "item_id": item_id, "target": "output", "approve": True, "edited_text": "Owner's **own** haiku",
        })
    worker.run_pending()
    assert status == 204
    (verdict,) = events.named("verdict")
    assert verdict["verdict"] == "approved" and verdict["edited"] is True
    assert events.named("trust.changed") == []
    assert trust_balance(crow, task_type) == before
    item = list_state(todo.list_id)["items"][0]
    assert item["stage"] == "answered" and item["answer"] == original
    assert item["edited_text"] == "Owner's **own** haiku"


# --- overrule --------------------------------------------------------------------------


def test_overruling_an_auto_answer_demotes_its_holders_as_a_rejection_would(capture_events):
    trust_everyone(("writing", "chat"))
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    item = Item.objects.get(item_id=item_id)
    assert item.stage == "answered"
    holders = item.crows
    with capture_events() as events:
        status, body = _post(Client(), "/api/verdicts", {
            "item_id": item_id, "target": "output", "overrule": True, "reason": "It rhymes; haiku do not.",
        })
    assert status == 204, body
    (overruled,) = events.named("verdict.overruled")
    assert overruled == {
        **overruled, "item_id": item_id, "target": "output", "holders": holders, "reason": "It rhymes; haiku do not.",
    }
    changed = events.named("trust.changed")
    assert [(c["holder"], c["from"], c["to"]) for c in changed] == [(h, 2, 1) for h in holders]
    assert all(trust_balance(h, item.task_type) == (1, 0) for h in holders)
    # The overrule, then the demotions it causes (docs/REVIEW.md).
    assert events.names() == ["verdict.overruled"] + ["trust.changed"] * len(holders)
    state = list_state(todo.list_id)["items"][0]
    assert state["overruled"] is True and state["verdicts"][-1]["reason"] == "It rhymes; haiku do not."
    # Twice is a conflict; an owner-approved answer is not overruled (it was answered then).
    assert _post(Client(), "/api/verdicts", {"item_id": item_id, "target": "output", "overrule": True})[0] == 409


def test_only_auto_answers_can_be_overruled():
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    with pytest.raises(NotFound):
        overrule_verdict(item_id)
    approve(item_id, "triage")
    approve(item_id, "output")
    with pytest.raises(Conflict, match="only an auto-approved answer"):
        overrule_verdict(item_id)
    with pytest.raises(BadInput):
        overrule_verdict(item_id, target="triage")


# --- crows and brains from the page -----------------------------------------------------


def test_patch_crow_changes_the_model_through_update_crow(capture_events, settings):
    settings.CROWS_OPENAI_API_KEY = "sk-test"
    settings.CROWS_ANTHROPIC_API_KEY = "sk-ant-test"
    client = Client()
    with capture_events() as events:
        response = client.patch("/api/crows/pepper", json.dumps({"model": "openai:gpt-4o-mini"}),
                                content_type="application/json")
    assert response.status_code == 200 and response.json()["model"] == "openai:gpt-4o-mini"
    (updated,) = events.named("crow.updated")
    assert updated["crow"] == "Pepper" and updated["changes"] == {"model": "openai:gpt-4o-mini"}
    assert updated["by"] == "owner"
    response = client.patch("/api/crows/Pepper", json.dumps({"model": "anthropic:claude-sonnet-4@20250514"}),
                            content_type="application/json")
    assert response.status_code == 200 and response.json()["model"] == "anthropic:claude-sonnet-4@20250514"
    response = client.patch("/api/crows/Pepper", json.dumps({"model": "gpt 4"}), content_type="application/json")
    assert response.status_code == 400 and "model must be" in response.json()["message"]
    response = client.patch("/api/crows/Nobody", json.dumps({"model": "mock"}), content_type="application/json")
    assert response.status_code == 404 and "message" in response.json()
    response = client.patch("/api/crows/Pepper", json.dumps({"model": None}), content_type="application/json")
    assert response.status_code == 400
    response = client.patch("/api/crows/Pepper", json.dumps({"model": ""}), content_type="application/json")
    assert response.status_code == 200 and Crow.objects.get(name="Pepper").model == ""
    assert response.json()["pinned"] is False


def test_saving_a_model_no_key_can_call_warns_and_is_refused_unless_confirmed(settings, capture_events):
    settings.CROWS_OPENAI_API_KEY = ""
    settings.CROWS_OPENAI_BASE_URL = ""
    client = Client()
    with capture_events() as events:
        response = client.patch("/api/crows/Pepper", json.dumps({"model": "openai:gpt-4o-mini"}),
                                content_type="application/json")
    assert response.status_code == 409
    message = response.json()["message"]
    assert "openai:gpt-4o-mini cannot be called yet: no OpenAI key" in message and "confirm: true" in message
    assert events.names() == [] and Crow.objects.get(name="Pepper").model == ""
    response = client.patch("/api/crows/Pepper", json.dumps({"model": "openai:gpt-4o-mini", "confirm": True}),
                            content_type="application/json")
    assert response.status_code == 200 and Crow.objects.get(name="Pepper").model == "openai:gpt-4o-mini"
    # A local server's base URL is enough; the mock and "" never need a key.
    settings.CROWS_OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"
    response = client.patch("/api/crows/Hugin", json.dumps({"model": "openai:llama3"}), content_type="application/json")
    assert response.status_code == 200
    for model in ("mock", ""):
        response = client.patch("/api/crows/Hugin", json.dumps({"model": model}), content_type="application/json")
        assert response.status_code == 200
    response = client.patch("/api/crows/Hugin", json.dumps({"confirm": "yes"}), content_type="application/json")
    assert response.status_code == 400 and "confirm" in response.json()["message"]
    response = client.patch("/api/crows/Hugin", json.dumps({"confirm": True}), content_type="application/json")
    assert response.status_code == 400 and "nothing to change" in response.json()["message"]


def test_a_crow_pinned_to_the_default_model_says_so(settings):
    settings.CROWS_BRAIN = "mock"
    client = Client()
    response = client.patch("/api/crows/Quill", json.dumps({"model": "mock"}), content_type="application/json")
    assert response.json()["model"] == "mock" and response.json()["pinned"] is True
    crows = {c["name"]: c for c in client.get("/api/crows").json()}
    assert (crows["Quill"]["model"], crows["Quill"]["pinned"]) == ("mock", True)
    assert (crows["Boss"]["model"], crows["Boss"]["pinned"]) == ("mock", False)


def test_test_connection_reports_latency_or_the_providers_error(settings):
    from tests.fakes.providers import FakeOpenAI

    fake = FakeOpenAI().start()
    try:
        settings.CROWS_OPENAI_BASE_URL = fake.base_url
        settings.CROWS_OPENAI_API_KEY = fake.api_key
        settings.CROWS_BRAIN_RETRIES = 0
        client = Client()
        update_crow("Pepper", by="owner", model="openai:gpt-test")
        status, body = _post(client, "/api/brains/test", {"crow": "Pepper"})
        assert status == 200 and body["ok"] is True and body["error"] == ""
        assert body["provider"] == "openai" and body["model"] == "gpt-test" and body["latency_ms"] >= 0
        assert len(fake.requests) == 1  # one tiny call
        fake.behaviour = "unauthorized"
        status, body = _post(client, "/api/brains/test", {"crow": "Pepper"})
        assert status == 200 and body["ok"] is False and "openai" in body["error"].lower()
    finally:
        fake.stop()
    status, body = _post(Client(), "/api/brains/test", {})
    assert status == 200 and body["mock"] is True and body["ok"] is True
    assert _post(Client(), "/api/brains/test", {"crow": "Nobody"})[0] == 404
    assert _post(Client(), "/api/brains/test", {"model": "nonsense spec"})[0] == 400
    assert _post(Client(), "/api/brains/test", {"crow": "Pepper", "model": "mock"})[0] == 400


def test_test_connection_is_one_call_and_a_reasoning_model_that_only_thought_is_connected(settings):
    from tests.fakes.providers import FakeOpenAI

    fake = FakeOpenAI().start()
    try:
        settings.CROWS_OPENAI_BASE_URL = fake.base_url
        settings.CROWS_OPENAI_API_KEY = fake.api_key
        settings.CROWS_BRAIN_RETRIES = 3  # a flight's retries; the test is still one call
        fake.behaviour = "error"
        status, body = _post(Client(), "/api/brains/test", {"model": "openai:gpt-test"})
        assert status == 200 and body["ok"] is False and len(fake.requests) == 1
        assert "attempts" not in body["error"]
        fake.behaviour = "thinking"
        status, body = _post(Client(), "/api/brains/test", {"model": "openai:o-think"})
        assert status == 200 and body["ok"] is True and body["error"] == "" and body["reply"] == ""
        assert "thinking" in body["note"] and "reasoning model" in body["note"]
        fake.behaviour = "ok"
        assert _post(Client(), "/api/brains/test", {"model": "openai:gpt-test"})[1]["note"] == ""
    finally:
        fake.stop()


def test_new_event_names_are_capabilities():
    body = Client().get("/api/state").json()
    assert {"verdict.overruled", "item.retried", "crow.updated"} <= set(body["capabilities"])


def test_seeded_trust_is_untouched_by_an_overrule_of_another_task_type():
    seed_trust("Pepper", task_type="code")
    assert trust_balance("Pepper", "code")[0] == 2


JUDGMENT = "should the logo be round or square?"


def test_a_retry_note_that_names_the_mode_is_flown_that_way(capture_events):
    # "whether"/"or" makes Jev sure it is a judgment call (a murder); the owner's note on the
    # retry says otherwise, and the owner's word wins over the brain's and Jev's.
    todo = run_list(JUDGMENT)
    item_id = f"{todo.list_id}-1"
    assert Item.objects.get(item_id=item_id).mode == "murder"
    approve(item_id, "triage", yes=False)
    retry_item(item_id, note="Fly it solo, one crow is plenty.")
    with capture_events() as events:
        worker.run_pending()
    (triaged,) = events.named("item.triaged")
    assert triaged["mode"] == "solo" and triaged["subtasks"] == []
    assert triaged["reason"].endswith("Flown solo, as your note asks.")
    # A note that names two modes, or none, leaves the call to the Sentry and Jev.
    from nests.actions.lists.triage import mode_named_in

    assert mode_named_in("split it, or a murder") is None
    assert mode_named_in("use a winter image") is None
    assert mode_named_in("Several crows this time, please") == "murder"
    assert mode_named_in("a single crow") == "solo"
