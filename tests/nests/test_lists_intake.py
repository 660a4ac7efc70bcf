"""Taking a list in: splitting, validation with messages that name the problem, the
requester's rate, and `list.started`."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from flock.errors import BadInput, NotFound, RateLimited
from nests.actions import create_nest, post_list
from nests.actions.lists import split_items
from nests.models import Item, Sortie, TodoList
from tests.nests.test_lists_support import stream

pytestmark = pytest.mark.django_db


def test_items_are_lines_with_their_bullets_stripped():
    text = "- milk\n* eggs\n+ bread\n1. call mum\n2) book dentist\n[ ] water plants\n[x] pay rent\n- [ ] walk dog\n\n   \nplain line"
    assert split_items(text) == [
        "milk", "eggs", "bread", "call mum", "book dentist", "water plants", "pay rent", "walk dog", "plain line",
    ]


def test_numbers_that_are_not_bullets_are_kept():
    assert split_items("1.5 kg of flour\n-5 degrees tonight\n*bold* claim") == [
        "1.5 kg of flour", "-5 degrees tonight", "*bold* claim",
    ]


@pytest.mark.parametrize(
    "text, words",
    [
        (None, "text is required"),
        (42, "text must be a string"),
        (["milk"], "text must be a string"),
        ("", "text is empty"),
        ("   \n\t", "text is empty"),
        ("-\n*\n[ ]", "no items"),
        ("ok\n" + "x" * 2001, "item 2 is 2,001 characters"),
        ("\n".join(f"item {n}" for n in range(21)), "21 items; a list may have at most 20"),
    ],
)
def test_bad_text_is_refused_naming_the_problem(text, words):
    with pytest.raises(BadInput, match=re.escape(words)):
        post_list(text, requester="ada")
    assert not TodoList.objects.exists()


def test_an_item_of_exactly_2000_characters_and_20_items_are_fine():
    todo = post_list("\n".join(["y" * 2000] + [f"item {n}" for n in range(19)]), requester="ada")
    assert todo.items.count() == 20


@pytest.mark.parametrize(
    "requester, words",
    [(None, "requester is required"), (7, "requester must be a string"), ("  ", "must not be empty"),
     ("r" * 81, "at most 80")],
)
def test_bad_requester_is_refused(requester, words):
    with pytest.raises(BadInput, match=words):
        post_list("milk", requester=requester)


def test_unknown_nest_is_not_found_and_a_non_string_nest_is_bad_input():
    with pytest.raises(NotFound, match="no such nest: 'nowhere'"):
        post_list("milk", requester="ada", nest_id="nowhere")
    with pytest.raises(BadInput, match="nest_id must be a string"):
        post_list("milk", requester="ada", nest_id=3)


def test_a_list_is_announced_with_numbered_items_its_requester_and_nest(capture_events):
    create_nest("Launch copy", crows=["Pepper", "Inky"])
    with capture_events() as events:
        todo = post_list("- draft the launch email\n- pick a date", requester=" ada ", nest_id="launch-copy")
    assert re.fullmatch(r"L[0-9a-z]{7}", todo.list_id)
    assert events.names() == ["list.started"]
    (started,) = events.named("list.started")
    assert started == {
        "list_id": todo.list_id,
        "items": [
            {"item_id": f"{todo.list_id}-1", "text": "draft the launch email"},
            {"item_id": f"{todo.list_id}-2", "text": "pick a date"},
        ],
        "requester": "ada",
        "nest_id": "launch-copy",
        "ts": started["ts"],
    }
    # Each item's triage is planned and queued with the list, in the same transaction.
    assert list(Sortie.objects.filter(todo_list=todo).values_list("role", "crow", "status")) == [
        ("sentry", "Sentry", "planned")
    ] * 2


def test_the_default_nest_is_todo():
    assert post_list("milk", requester="ada").nest_id == "todo"
    assert post_list("milk", requester="ada", nest_id="").nest_id == "todo"


def test_a_bad_body_is_not_counted_as_a_post(settings):
    settings.CROWS_LIST_RATE_PER_MIN = 1
    for _ in range(3):
        with pytest.raises(BadInput):
            post_list("", requester="ada")
    with pytest.raises(NotFound):
        post_list("milk", requester="ada", nest_id="nowhere")
    post_list("milk", requester="ada")
    with pytest.raises(RateLimited) as refused:
        post_list("eggs", requester="ada")
    assert refused.value.cooldown_s == settings.CROWS_PRANK_COOLDOWN_S
    assert TodoList.objects.count() == 1 and Item.objects.count() == 1


def test_a_strike_pranks_every_flying_list_of_that_requester_only(settings, capture_events):
    settings.CROWS_LIST_RATE_PER_MIN = 2
    mine = [post_list("milk", requester="mallory"), post_list("eggs", requester="mallory")]
    theirs = post_list("bread", requester="ada")
    TodoList.objects.filter(pk=mine[0].pk).update(status=TodoList.Status.FINISHED)
    with capture_events() as events, pytest.raises(RateLimited) as refused:
        post_list("more", requester="mallory")
    assert events.names() == ["requester.pranked"]
    (pranked,) = events.named("requester.pranked")
    assert pranked["list_id"] == mine[1].list_id
    assert pranked["message"] == refused.value.message and pranked["cooldown_s"] == refused.value.cooldown_s
    assert stream(theirs.list_id)[-1][0] == "list.started"
    # While cooling down, refusals add no strike and no further prank.
    with capture_events() as again, pytest.raises(RateLimited):
        post_list("more", requester="mallory")
    assert again.names() == []


def test_a_crow_or_owner_strike_pranks_no_list(settings, capture_events):
    from trust.actions import admit_post, poster_key

    settings.CROWS_NEST_POST_RATE_PER_MIN = 1
    post_list("milk", requester="Pepper")
    admit_post(poster_key(crow="Pepper"), kind="nest")
    with capture_events() as events, pytest.raises(RateLimited):
        admit_post(poster_key(crow="Pepper"), kind="nest")
    assert events.names() == []


def test_the_owners_eleventh_list_in_a_minute_is_taken_and_nobody_is_pranked(settings, capture_events):
    settings.CROWS_LIST_RATE_PER_MIN = 10
    with capture_events() as events:
        for i in range(11):
            response = _post(Client(), {"text": f"milk {i}", "requester": "owner"})
            assert response.status_code == 202, response.json()
    assert "requester.pranked" not in events.names()
    # A requester's eleventh is still pranked.
    for i in range(10):
        post_list(f"eggs {i}", requester="mallory")
    with capture_events() as events:
        response = _post(Client(), {"text": "one more", "requester": "mallory"})
    assert response.status_code == 429
    assert set(events.names()) == {"requester.pranked"}


def test_over_the_owners_own_limit_a_plain_429_with_no_strike_or_prank(settings, capture_events):
    from trust.actions.strikes import PRANKS, owner_limit
    from trust.models import Strike

    settings.CROWS_LIST_RATE_PER_MIN = 1
    for i in range(owner_limit("list")):
        post_list(f"milk {i}", requester="owner")
    with capture_events() as events:
        response = _post(Client(), {"text": "one too many", "requester": "owner"})
    assert response.status_code == 429
    body = response.json()
    assert "the most one minute takes" in body["message"] and 1 <= body["cooldown_s"] <= 60
    assert not any(p.split("{")[0] in body["message"] for p in PRANKS)
    assert events.names() == [] and not Strike.objects.exists()


def _post(client: Client, body: object, raw: str | None = None):
    data = raw if raw is not None else json.dumps(body)
    # CONTENT_TYPE too: Django's test client drops the header for an empty body, and the
    # API answers a POST without it 415 (docs/SECURITY.md).
    return client.post("/api/lists", data=data, content_type="application/json", CONTENT_TYPE="application/json")


def test_the_api_answers_202_with_the_list_id():
    response = _post(Client(), {"text": "milk\neggs", "requester": "ada"})
    assert response.status_code == 202
    assert TodoList.objects.get().list_id == response.json()["list_id"]


@pytest.mark.parametrize(
    "body, raw, words",
    [
        (None, "{not json", "not valid JSON"),
        (None, "", ""),
        ([1, 2], None, ""),
        ({"text": 5, "requester": "ada"}, None, "text must be a string"),
        ({"text": "milk"}, None, "requester is required"),
        ({"text": "milk", "requester": ["ada"]}, None, "requester must be a string"),
        ({"text": "milk", "requester": "ada", "nest_id": {"x": 1}}, None, "nest_id must be a string"),
    ],
)
def test_the_api_answers_400_with_a_message(body, raw, words):
    response = _post(Client(), body, raw)
    assert response.status_code == 400
    assert words in response.json()["message"]


def test_the_api_answers_404_for_an_unknown_nest_and_429_with_a_cooldown(settings):
    settings.CROWS_LIST_RATE_PER_MIN = 1
    client = Client()
    assert _post(client, {"text": "milk", "requester": "ada", "nest_id": "nope"}).status_code == 404
    assert _post(client, {"text": "milk", "requester": "ada"}).status_code == 202
    refused = _post(client, {"text": "milk", "requester": "ada"})
    assert refused.status_code == 429
    assert set(refused.json()) == {"message", "cooldown_s"} and refused.json()["cooldown_s"] == 60
    assert refused["Retry-After"] == "60"


def test_a_huge_body_is_a_413_with_a_message():
    response = _post(Client(), {"text": "x" * (300 * 1024), "requester": "ada"})
    assert response.status_code == 413
    assert response.json()["message"] == "the request body is too large: at most 262,144 bytes"
