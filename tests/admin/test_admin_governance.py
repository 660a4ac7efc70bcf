"""The admin's quarantine and decision controls, on top of the quarantine and owner
decisions actions (trust.actions.quarantine / decisions). They answer exactly as the API
and the room do, with `by` = "admin:<username>"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from flock.models import Crow
from tests.admin.test_admin import change, changelist, run_action, staff  # noqa: F401 - the fixture
from trust.actions import open_decision, quarantine_crow, reinstate_phrase
from trust.models import Decision

pytestmark = pytest.mark.django_db


def quarantine_decision(crow: str) -> Decision:
    quarantine_crow(crow, breach="owner_report", evidence="test", by="Sentry")
    return open_decision(
        subject=f"{crow} quarantined", question=f"Reinstate {crow}?", phrase=reinstate_phrase(crow),
        recommendation="reinstate", kind=Decision.Kind.QUARANTINE, crow=crow,
    )


def test_quarantine_and_reinstate_from_the_crow_list(staff, capture_events):  # noqa: F811
    pepper = Crow.objects.get(name="Pepper")
    with capture_events() as events:
        run_action(staff, Crow, "quarantine", [pepper.pk])
    (quarantined,) = events.named("crow.quarantined")
    assert quarantined["crow"] == "Pepper" and quarantined["by"] == "admin:ada"
    assert Crow.objects.get(name="Pepper").status == "quarantined"
    with capture_events() as events:
        run_action(staff, Crow, "reinstate", [pepper.pk])
    (reinstated,) = events.named("crow.reinstated")
    assert reinstated["crow"] == "Pepper" and reinstated["by"] == "admin:ada"
    assert Crow.objects.get(name="Pepper").status == "active"
    with capture_events() as refused:
        response = run_action(staff, Crow, "reinstate", [pepper.pk])
    assert refused.names() == [] and "not quarantined" in response.content.decode()


def test_the_phrase_button_reinstates_through_answer_decision(staff, capture_events):  # noqa: F811
    decision = quarantine_decision("Inky")
    page = staff.get(changelist(Decision)).content.decode()
    assert "yes, reinstate Inky" in page and "Retire Inky" in page
    answer = reverse("admin:trust_decision_answer", args=[decision.pk])
    assert staff.get(answer).status_code == 405
    with capture_events() as events:
        done = staff.post(answer, {"answer": "phrase"}, follow=True)
    assert events.names() == ["crow.reinstated", "decision.closed"]
    # The id keeps its case (the admin capitalises a message's first letter).
    assert f"Decision {decision.decision_id}: reinstated" in done.content.decode()
    closed = events.named("decision.closed")[0]
    assert closed["outcome"] == "reinstated" and closed["by"] == "admin:ada"
    assert Crow.objects.get(name="Inky").status == "active"
    with capture_events() as again:
        response = staff.post(answer, {"answer": "phrase"}, follow=True)
    assert again.names() == [] and "no open decision" in response.content.decode().lower()


def test_retire_and_no_from_the_decision_list(staff, capture_events):  # noqa: F811
    retire = quarantine_decision("Soot")
    keep = quarantine_decision("Rook")
    with capture_events() as events:
        staff.post(reverse("admin:trust_decision_answer", args=[retire.pk]), {"answer": "retire"})
        staff.post(reverse("admin:trust_decision_answer", args=[keep.pk]), {"answer": "no"})
    assert [p["crow"] for p in events.named("crow.retired")] == ["Soot"]
    assert [(p["crow"], p["outcome"]) for p in events.named("decision.closed")] == [("Soot", "retired"), ("Rook", "kept")]
    assert Crow.objects.get(name="Rook").status == "quarantined"


def test_an_answer_the_decision_shows_no_button_for_is_refused_and_changes_nothing(staff, capture_events):  # noqa: F811
    choice = open_decision(subject="logo", question="Round or square?", options=["round", "square"])
    answer = reverse("admin:trust_decision_answer", args=[choice.pk])
    for missing in ("retire", "phrase"):
        with capture_events() as events:
            response = staff.post(answer, {"answer": missing}, follow=True)
        assert events.names() == []
        assert f"Decision {choice.decision_id} has no {missing} answer." in response.content.decode()
    assert Decision.objects.get(pk=choice.pk).status == "open"


def test_decisions_cannot_be_added_edited_or_deleted_raw(staff):  # noqa: F811
    decision = quarantine_decision("Hugin")
    assert staff.get(reverse("admin:trust_decision_add")).status_code == 403
    assert staff.get(reverse("admin:trust_decision_delete", args=[decision.pk])).status_code == 403
    assert staff.post(change(Decision, decision.pk), {"status": "closed"}).status_code == 403
    assert Decision.objects.get(pk=decision.pk).status == "open"


def test_expire_approvals_also_closes_overdue_decisions_and_prune_keeps_open_ones(capture_events):
    import io
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from flock.models import Event

    overdue = quarantine_decision("Munin")
    still_open = quarantine_decision("Pepper")
    Decision.objects.filter(pk=overdue.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    out = io.StringIO()
    with capture_events() as events:
        call_command("expire_approvals", stdout=out)
    assert f"decisions: timed out 1: {overdue.decision_id}" in out.getvalue()
    assert [(p["decision_id"], p["outcome"]) for p in events.named("decision.closed")] == [(overdue.decision_id, "timeout")]
    # Prune everything old: the open decision's events stay.
    kept = set(Event.objects.filter(payload__decision_id=still_open.decision_id).values_list("id", flat=True))
    kept |= set(Event.objects.filter(name="crow.quarantined", payload__crow="Pepper").values_list("id", flat=True))
    assert kept
    Event.objects.update(created_at=timezone.now() - timedelta(days=10))
    call_command("prune", "--older-than", "1", "--yes", stdout=io.StringIO())
    # ... and only they: events without a decision_id go too (a JSON key's NULL once
    # kept every one of them while any decision was open).
    assert set(Event.objects.values_list("id", flat=True)) == kept
    assert not Event.objects.filter(payload__decision_id=overdue.decision_id).exists()


def test_the_breach_log_is_read_only(staff):  # noqa: F811
    from trust.models import Breach

    quarantine_decision("Munin")
    breach = Breach.objects.get()
    assert staff.get(changelist(Breach)).status_code == 200
    assert staff.get(reverse("admin:trust_breach_delete", args=[breach.pk])).status_code == 403
    assert staff.post(change(Breach, breach.pk), {"kind": "redo"}).status_code == 403


def test_retire_from_the_crow_list_closes_the_crows_open_decision_as_retired(staff, capture_events):  # noqa: F811
    decision = quarantine_decision("Soot")
    with capture_events() as events:
        run_action(staff, Crow, "retire", [Crow.objects.get(name="Soot").pk])
    assert events.names() == ["crow.retired", "decision.closed"]
    closed = events.named("decision.closed")[0]
    assert (closed["decision_id"], closed["outcome"], closed["by"]) == (decision.decision_id, "retired", "admin:ada")
    assert Decision.objects.get(pk=decision.pk).outcome == "retired"
