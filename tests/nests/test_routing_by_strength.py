"""Routing by strength (docs/CHATROOM.md "Fit", docs/LISTS.md "Crew"): the crow chosen for
a request, in a room or in a list, is the one whose task types and strength fit it: a
code fix goes to the coder (Pepper), research to the researcher (Hugin). Ties break on
the task type first, then the fit score, then roster order.

With Jev's real models (its test cache), as an owner's words reach it, except where a
test pins the fit scores to show how a tie breaks."""

from __future__ import annotations

import pytest
from django.db import transaction

from flock import worker
from flock.jev import warm
from flock.models import Crow, JevTag
from nests import crow_fit
from nests.actions import create_nest, post_message
from nests.actions.lists.crews import pick_crows
from nests.models import ChatRequest, Invocation, NestMessage
from tests.nests.test_lists_support import named, run_list, stream, trust_everyone
from tests.support.scripted_brain import give_rights

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def jev_fit_loaded() -> None:
    # As in a server once its start-up warm-up is done: a list's crew is scored by fit
    # only when that loads nothing (docs/LISTS.md "Crew").
    warm()
    assert crow_fit.ready_without_loading()

CODE_FIX = "Fix this Python function: def add(a, b): return a - b"
RESEARCH = "Find sources on the history of crows in folklore"
WORKERS = ["Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook"]


def _pick(nest_id: str, count: int, text: str = "", task_type: str = "") -> list[tuple[str, bool]]:
    with transaction.atomic():
        return pick_crows(nest_id, count=count, text=text, task_type=task_type)


def _room_with_every_worker() -> None:
    create_nest("Workshop", crows=WORKERS)
    give_rights(*WORKERS)  # regulars: each may be picked for an open request


# --- in a room: an owner's request with no @mention is dispatched by fit -------------------


def test_an_owners_code_fix_in_a_room_goes_to_the_coder():
    _room_with_every_worker()
    message = post_message("workshop", author="owner", text=CODE_FIX)
    # Jev reads it as a request among the owner's kinds (its crow-kind share is no evidence).
    assert message.kind == "request" and ChatRequest.objects.get().task_type == "code"
    invocation = Invocation.objects.get()
    assert (invocation.crow, invocation.reason, invocation.expect) == ("Pepper", "fit", "claim")
    tag = JevTag.objects.get(question="crow_fit")
    assert tag.choice == "Pepper" and set(tag.probs) == set(WORKERS)


@pytest.mark.parametrize("text", ["Fix this Python function", "Debug this script: x = 1/0"])
def test_an_owners_bare_or_pasted_code_fix_is_a_request_the_coder_answers(text):
    # The words as an owner types them: with no code yet, or with the code pasted
    # after a colon (which read as a delivery before Jev learned owners' instructions).
    _room_with_every_worker()
    message = post_message("workshop", author="owner", text=text)
    assert message.kind == "request"
    assert Invocation.objects.get().crow == "Pepper"


def test_an_owners_research_request_in_a_room_goes_to_the_researcher():
    _room_with_every_worker()
    post_message("workshop", author="owner", text=RESEARCH, kind="request")
    assert ChatRequest.objects.get().task_type == "research"
    assert Invocation.objects.get().crow == "Hugin"


def test_quill_routes_a_request_nobody_may_claim_to_the_crow_that_fits():
    # Strangers all: Quill addresses the best fit by name on the owner's behalf.
    create_nest("Strangers", crows=WORKERS)
    post_message("strangers", author="owner", text=CODE_FIX, kind="request")
    assert Invocation.objects.get().reason == "quill_route"
    worker.run_pending()
    routed = NestMessage.objects.get(nest__nest_id="strangers", author="Quill", kind="request")
    assert routed.to == "Pepper"


def test_the_task_type_outranks_a_higher_fit_score_and_ties_go_to_roster_order(monkeypatch):
    _room_with_every_worker()
    # Jev's similarity favours Hugin, but the request is code: the crows typed for code
    # (Pepper and Rook) come first; between them, equal scores go to roster order.
    fits = {"Hugin": 0.5, "Pepper": 0.1, "Rook": 0.1}
    monkeypatch.setattr("nests.crow_fit.profile", lambda crow: crow.name)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: fits.get(profile, 0.0))
    post_message("workshop", author="owner", text=CODE_FIX, kind="request")
    invocation = Invocation.objects.get()
    assert invocation.crow == "Pepper" and invocation.candidates["Pepper"] == invocation.candidates["Rook"]
    assert invocation.candidates["Hugin"] > invocation.candidates["Pepper"]


# --- in a list: an item triaged solo is flown by the crow that fits -------------------------


def _triage_and_workers(text: str) -> tuple[tuple[str, str], list[str]]:
    """An item's (mode, task type) as triaged, and the worker crows that flew it."""
    trust_everyone()
    events = stream(run_list(text).list_id)
    (triaged,) = named(events, "item.triaged")
    workers = [p["crow"] for p in named(events, "crow.flying") if p["crow"] not in ("Sentry", "Elder")]
    return (triaged["mode"], triaged["task_type"]), workers


def test_a_solo_code_fix_in_a_list_is_flown_by_the_coder():
    assert _triage_and_workers(CODE_FIX) == (("solo", "code"), ["Pepper"])


def test_a_solo_research_item_in_a_list_is_flown_by_the_researcher():
    # The coder has had its turn in this round already; that changes nothing for research.
    _pick("todo", 1, CODE_FIX, "code")
    assert _triage_and_workers(RESEARCH) == (("solo", "research"), ["Hugin"])


def test_a_core_shares_its_work_in_rounds_the_best_fit_first():
    # EVENTS.md "Nests": core-first, rotating within the core. Each round every core crow
    # flies once; whose turn is still to come is taken best fit first.
    create_nest("Duo", crows=["Inky", "Pepper"])
    assert _pick("duo", 1, CODE_FIX, "code") == [("Pepper", False)]
    assert _pick("duo", 1, CODE_FIX, "code") == [("Inky", False)]  # Pepper had its turn
    assert _pick("duo", 1, "Write a haiku about crows", "writing") == [("Inky", False)]  # a new round
    assert _pick("duo", 1, CODE_FIX, "code") == [("Pepper", False)]
    # Borrowed crows rotate the same way: the best fit outside the core first.
    assert _pick("duo", 3, CODE_FIX, "code") == [("Pepper", False), ("Inky", False), ("Rook", True)]
    research = _pick("duo", 3, RESEARCH, "research")
    assert sorted(research[:2]) == [("Inky", False), ("Pepper", False)] and research[2] == ("Hugin", True)


def test_with_no_fit_to_go_on_the_rotation_is_roster_order():
    assert [name for _ in range(3) for name, _ in _pick("todo", 3)] == [
        "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook", "Quill", "Boss", "Hugin",
    ]


def test_a_crow_that_leaves_mid_round_gives_up_its_turn():
    create_nest("Trio", crows=["Hugin", "Pepper", "Inky"])
    assert _pick("trio", 1, CODE_FIX, "code") == [("Pepper", False)]
    Crow.objects.filter(name="Inky").update(status=Crow.Status.QUARANTINED)
    # Hugin is the last of the round now; then a new round starts, the coder first.
    assert _pick("trio", 1, CODE_FIX, "code") == [("Hugin", False)]
    assert _pick("trio", 1, CODE_FIX, "code") == [("Pepper", False)]


def test_until_jevs_fit_has_loaded_the_task_types_and_roster_order_decide(monkeypatch):
    # No model is loaded under the rotation's lock: just after a start the fit scores nobody.
    monkeypatch.setattr("nests.crow_fit.ready_without_loading", lambda: False)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: pytest.fail("scored under the lock"))
    assert _pick("todo", 1, CODE_FIX, "code") == [("Pepper", False)]
    assert _pick("todo", 1, RESEARCH, "research") == [("Hugin", False)]
