"""The admin as the owner's control panel, through Django's test client: every action
goes through the API's own action functions and emits the same events, with `by`; the
append-only tables refuse raw edits and deletes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from flock.actions import record_flight
from flock.models import Crow, Event, Flight, JevTag
from nests.models import Item, Nest
from tests.nests.test_lists_support import run_list
from trust.actions import seed_trust
from trust.models import Approval, Strike, TrustEntry, TrustHolder, Verdict
from trust.queries import trust_balance

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db) -> Client:
    """The owner's account, made with createsuperuser: may use every admin page."""
    User.objects.create_superuser("ada", "ada@example.com", "pw-for-tests")
    client = Client()
    client.force_login(User.objects.get(username="ada"))
    return client


def changelist(model: type) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change(model: type, pk: object) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])


def run_action(client: Client, model: type, action: str, pks: list, **extra: str):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks], "index": "0", **extra}
    return client.post(changelist(model), data, follow=True)


def waiting_triage() -> Approval:
    todo = run_list("write a haiku about crows")
    return Approval.objects.get(list_id=todo.list_id, target="triage")


def test_the_admin_needs_a_staff_login(client):
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_waiting_approvals_show_the_item_text_and_approve_emits_the_apis_verdict_with_by(staff, capture_events):
    approval = waiting_triage()
    page = staff.get(changelist(Approval))
    assert page.status_code == 200
    assert "write a haiku about crows" in page.content.decode()
    with capture_events() as events:
        response = run_action(staff, Approval, "approve", [approval.pk])
    assert response.status_code == 200
    (verdict,) = events.named("verdict")
    assert verdict == {**verdict, "item_id": approval.item_id, "target": "triage", "verdict": "approved", "by": "admin:ada", "list_id": approval.list_id}
    # The pipeline went on exactly as after POST /api/verdicts.
    item = Item.objects.get(item_id=approval.item_id)
    assert item.stage != Item.Stage.TRIAGE_REVIEW


def test_reject_from_the_admin_skips_the_item_and_a_second_answer_changes_nothing(staff, capture_events):
    approval = waiting_triage()
    with capture_events() as events:
        run_action(staff, Approval, "reject", [approval.pk])
    assert [p["verdict"] for p in events.named("verdict")] == ["rejected"]
    assert events.named("verdict")[0]["by"] == "admin:ada"
    assert Item.objects.get(item_id=approval.item_id).stage == Item.Stage.SKIPPED
    with capture_events() as again:
        response = run_action(staff, Approval, "approve", [approval.pk])
    assert again.named("verdict") == []
    assert "nothing is waiting" in response.content.decode()


def test_approvals_cannot_be_added_edited_or_deleted(staff):
    approval = waiting_triage()
    assert staff.get(reverse("admin:trust_approval_add")).status_code == 403
    assert staff.get(reverse("admin:trust_approval_delete", args=[approval.pk])).status_code == 403
    staff.post(change(Approval, approval.pk), {"deadline": "2000-01-01 00:00:00", "list_id": "x"})
    assert Approval.objects.get(pk=approval.pk).list_id == approval.list_id
    response = staff.post(changelist(Approval), {"action": "delete_selected", "_selected_action": [approval.pk], "index": "0"}, follow=True)
    assert Approval.objects.filter(pk=approval.pk).exists()
    assert response.status_code == 200


@pytest.mark.parametrize("model", [Event, TrustEntry, Verdict, Flight, JevTag])
def test_append_only_tables_are_read_only_and_undeletable(staff, model):
    seed_trust("flock", task_type="code")  # events and ledger entries
    record_flight(crow="Hugin", provider="mock", model="mock", task="answer", ok=True)
    run_list("write a haiku about crows")  # a verdict-less approval; add one verdict:
    from django.db import transaction

    from trust.actions import record_auto_verdict

    with transaction.atomic():
        record_auto_verdict("zz-1", target="triage", list_id="zz")
    JevTag.objects.create(question="kind", choice="say", band="high", probs={}, impl="t", version="1")
    row = model.objects.order_by("id").first()
    assert row is not None
    before = model.objects.count()
    assert staff.get(changelist(model)).status_code == 200
    assert staff.get(change(model, row.pk)).status_code == 200  # view only
    info = (model._meta.app_label, model._meta.model_name)
    assert staff.get(reverse("admin:{}_{}_add".format(*info))).status_code == 403
    assert staff.get(reverse("admin:{}_{}_delete".format(*info), args=[row.pk])).status_code == 403
    assert staff.post(reverse("admin:{}_{}_delete".format(*info), args=[row.pk]), {"post": "yes"}).status_code == 403
    edited = staff.post(change(model, row.pk), {"name": "hacked", "holder": "hacked", "verdict": "approved", "crow": "hacked"})
    assert edited.status_code == 403
    staff.post(changelist(model), {"action": "delete_selected", "_selected_action": [row.pk], "index": "0", "post": "yes"})
    assert model.objects.count() == before
    assert "delete_selected" not in staff.get(changelist(model)).content.decode()


def test_the_event_log_is_searchable_by_name_list_nest_and_date(staff):
    from nests.actions import create_nest, post_message

    todo = run_list("write a haiku about crows")
    post_message("todo", author="owner", text="hello flock")

    def found(**query: object) -> set[tuple[str, str, str]]:
        response = staff.get(changelist(Event), query)
        assert response.status_code == 200
        return {(e.name, e.list_key, e.nest_key) for e in response.context["cl"].result_list}

    assert found(q=todo.list_id) and all(list_key == todo.list_id for _, list_key, _ in found(q=todo.list_id))
    assert {name for name, _, _ in found(q="list.started")} == {"list.started"}
    # By nest: its own stream's events, and those that name it only in their payload.
    assert {name for name, _, _ in found(q="todo")} == {"nest.message", "list.started"}
    create_nest("Launch copy", crows=["Pepper", "Inky"])
    assert {name for name, _, _ in found(q="launch-copy")} == {"nest.created"}
    assert {name for name, _, _ in found(name="nest.message")} == {"nest.message"}
    # By item, by crow (any case) and by message: what an owner asks about.
    assert {"item.triaged", "crow.flying"} <= {name for name, _, _ in found(q=f"{todo.list_id}-1")}
    crow = todo.sorties.first().crow  # the Sentry, triaging (the flock is not trusted yet)
    assert {"crow.flying", "crow.landed"} <= {name for name, _, _ in found(q=crow.lower())}
    assert {name for name, _, _ in found(q="todo-1")} == {"nest.message"}
    today = timezone.now()
    assert ("list.started", todo.list_id, "") in found(created_at__year=today.year, created_at__month=today.month, created_at__day=today.day)
    before = today - timedelta(days=2)
    assert found(created_at__year=before.year, created_at__month=before.month, created_at__day=before.day) == set()


def test_editing_a_crows_persona_voice_and_model_goes_through_update_crow(staff, capture_events):
    crow = Crow.objects.get(name="Pepper")
    page = staff.get(change(Crow, crow.pk)).content.decode().lower()
    assert "trust per task type" in page and "recent flights" in page
    form = {f: getattr(crow, f) for f in ("epithet", "strength", "backstory", "persona", "voice", "model")}
    form.update(persona="You are Pepper, now terse.", voice="Clipped.", model="openai:gpt-4o-mini", status="quarantined", role="elder")
    with capture_events() as events:
        response = staff.post(change(Crow, crow.pk), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    (updated,) = events.named("crow.updated")
    assert updated["crow"] == "Pepper" and updated["by"] == "admin:ada"
    assert updated["changes"] == {"persona": "You are Pepper, now terse.", "voice": "Clipped.", "model": "openai:gpt-4o-mini"}
    assert set(updated["previous"]) == {"persona", "voice", "model"}
    assert updated["model"] == "openai:gpt-4o-mini"
    crow.refresh_from_db()
    # Status and role are not editable here: the raw fields in the post were ignored.
    assert (crow.status, crow.role, crow.voice) == ("active", "worker", "Clipped.")
    # The owner picked a model: Jev scores it, as for every model pick (docs/GOVERNANCE.md).
    assert events.names() == ["crow.updated", "orchestration.decided"]
    (scored,) = events.named("orchestration.decided")
    assert (scored["decider"], scored["crow"], scored["model"]) == ("admin:ada", "Pepper", "openai:gpt-4o-mini")


@pytest.mark.parametrize("key", ["", "sk-test"])
def test_a_model_whose_provider_has_no_key_is_saved_with_a_warning_naming_the_variable(staff, settings, monkeypatch, key):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.CROWS_ANTHROPIC_API_KEY = key
    crow = Crow.objects.get(name="Pepper")
    form = {f: getattr(crow, f) for f in ("epithet", "strength", "backstory", "persona", "voice", "model")}
    form["model"] = "anthropic:claude-sonnet-4-5"
    shown = [str(m) for m in staff.post(change(Crow, crow.pk), form, follow=True).context["messages"]]
    assert Crow.objects.get(name="Pepper").model == "anthropic:claude-sonnet-4-5"
    warning = (
        "Pepper now uses anthropic:claude-sonnet-4-5, but no API key is set for it: set CROWS_ANTHROPIC_API_KEY or "
        "ANTHROPIC_API_KEY in the server's environment; until then each of its calls fails."
    )
    assert (warning in shown) == (not key)


def test_a_bad_model_is_a_form_error_and_changes_nothing(staff, capture_events):
    crow = Crow.objects.get(name="Pepper")
    form = {f: getattr(crow, f) for f in ("epithet", "strength", "backstory", "persona", "voice", "model")}
    form["model"] = "skynet:9000"
    with capture_events() as events:
        response = staff.post(change(Crow, crow.pk), form)
    assert response.status_code == 200 and "model must be" in response.content.decode()
    assert events.names() == []
    assert Crow.objects.get(name="Pepper").model == ""


def test_crows_cannot_be_added_or_deleted_raw_and_retire_emits_crow_retired(staff, capture_events):
    crow = Crow.objects.get(name="Rook")
    assert staff.get(reverse("admin:flock_crow_add")).status_code == 403
    assert staff.get(reverse("admin:flock_crow_delete", args=[crow.pk])).status_code == 403
    with capture_events() as events:
        run_action(staff, Crow, "retire", [crow.pk])
    (retired,) = events.named("crow.retired")
    assert retired["crow"] == "Rook" and retired["retired_by"] == "admin:ada"
    assert Crow.objects.get(name="Rook").status == "retired"
    # The Elder keeps the flock running: the action refuses, nothing is emitted.
    elder = Crow.objects.get(name="Elder")
    with capture_events() as refused:
        response = run_action(staff, Crow, "retire", [elder.pk])
    assert refused.names() == [] and "cannot be retired" in response.content.decode()
    # On the list, a retired crow is on no roster.
    listing = staff.get(changelist(Crow), {"status__exact": "retired"}).content.decode()
    assert "Rook" in listing and 'alt="False"' in listing


def test_reset_to_stranger_appends_a_reset_entry_and_emits_trust_changed(staff, capture_events):
    seed_trust("Pepper", task_type="code", level=2)
    holder = TrustHolder.objects.get(holder="Pepper", task_type="code")
    assert "2 trusted" in staff.get(changelist(TrustHolder)).content.decode()
    with capture_events() as events:
        run_action(staff, TrustHolder, "reset_to_stranger", [holder.pk])
    (changed,) = events.named("trust.changed")
    assert changed == {**changed, "holder": "Pepper", "task_type": "code", "from": 2, "to": 0, "by": "admin:ada"}
    assert trust_balance("Pepper", "code") == (0, 0)
    assert TrustEntry.objects.filter(holder="Pepper", source="reset").count() == 1
    with capture_events() as again:
        response = run_action(staff, TrustHolder, "reset_to_stranger", [holder.pk])
    assert again.names() == [] and "Already strangers" in response.content.decode()


def test_lift_cooldown_ends_a_strike_and_emits_requester_cooldown_lifted(staff, capture_events, settings):
    from flock.errors import RateLimited
    from trust.actions import admit_post

    # Earned as a requester earns it: over the rate within the minute.
    settings.CROWS_LIST_RATE_PER_MIN = 2
    admit_post("requester:bob", kind="list")
    admit_post("requester:bob", kind="list")
    with pytest.raises(RateLimited):
        admit_post("requester:bob", kind="list")
    strike = Strike.objects.get(key="requester:bob")
    with capture_events() as events:
        run_action(staff, Strike, "lift_cooldowns", [strike.pk])
    (lifted,) = events.named("requester.cooldown_lifted")
    assert lifted == {**lifted, "key": "requester:bob", "requester": "bob", "strikes": 1, "by": "admin:ada"}
    assert Strike.objects.get(pk=strike.pk).until <= timezone.now()
    # Admitted at once, though the posts that earned the strike are still within the
    # minute: lifting forgives them too, or the next post would earn a doubled strike.
    admit_post("requester:bob", kind="list")


def test_nest_members_are_added_and_removed_through_the_action(staff, capture_events):
    from nests.actions import create_nest

    nest = create_nest("Launch copy", crows=["Pepper", "Inky"])
    with capture_events() as events:
        run_action(staff, Nest, "add_member", [nest.pk], crow="Hugin")
        run_action(staff, Nest, "remove_member", [nest.pk], crow="Pepper")
    added, removed = events.named("nest.members_changed")
    assert added == {**added, "nest_id": "launch-copy", "crows": ["Pepper", "Inky", "Hugin"], "added": ["Hugin"], "removed": [], "by": "admin:ada"}
    assert removed == {**removed, "crows": ["Inky", "Hugin"], "added": [], "removed": ["Pepper"], "by": "admin:ada"}
    assert Nest.objects.get(pk=nest.pk).core == ["Inky", "Hugin"]
    todo = Nest.objects.get(nest_id="todo")
    with capture_events() as refused:
        response = run_action(staff, Nest, "add_member", [todo.pk], crow="Hugin")
    assert refused.names() == [] and "not picked" in response.content.decode()
    # Raw edits of a nest are refused.
    assert staff.post(change(Nest, nest.pk), {"core": '["Rook"]'}).status_code == 403


@pytest.mark.parametrize(
    ("model", "action"),
    [(Crow, "quarantine"), (Approval, "approve"), (TrustHolder, "reset_to_stranger"), (Strike, "lift_cooldowns"),
     (Nest, "add_member"), (User, "delete_selected")],
)
@pytest.mark.parametrize("junk", ["abc", "", "1.5", "99999999999999999999999", "1\x00"])
def test_an_action_on_ids_that_are_not_ids_is_refused_with_a_message_and_does_nothing(staff, capture_events, model, action, junk):
    """Stock Django looks a hand-made `_selected_action` up as it comes: a server error."""
    crow = Crow.objects.get(name="Quill")
    with capture_events() as events:
        response = run_action(staff, model, action, [crow.pk, junk])
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [f"Nothing was done: {junk[:40]!r} is not the id of any {model._meta.verbose_name}."]
    assert list(events) == []
    assert Crow.objects.get(name="Quill").status == crow.status


@pytest.mark.parametrize(
    ("model", "query"),
    [(Event, "id__in=99999999999999999999999"), (Crow, "id__in=99999999999999999999999"), (User, "id__in=99999999999999999999999"),
     (Crow, "created_at__year=0"), (User, "date_joined__year=0"), (Crow, "created_at__iso_year=-5"),
     (DBTaskResult, "enqueued_at__year=0"),
     # Event's date drill-down reads the dates as its filters: past year 9999, or no month.
     (Event, "created_at__year=9999&created_at__month=12"), (Event, "created_at__year=2026&created_at__month=99999999999999999999")],
)
def test_a_changelist_lookup_out_of_range_is_djangos_bad_lookup_answer_not_a_server_error(staff, model, query):
    response = staff.get(f"{changelist(model)}?{query}")
    # Django's answer to a lookup it cannot use: back to the list with ?e=1. A field the
    # model lacks is already refused that way.
    assert (response.status_code, response["Location"]) == (302, f"{changelist(model)}?e=1")


@pytest.mark.parametrize("model", [Event, Crow, DBTaskResult])
def test_a_nul_in_a_lookup_or_a_search_is_no_server_error(staff, model):
    # PostgreSQL cannot take a NUL in a string (a DataError); SQLite finds nothing.
    field = "task_path" if model is DBTaskResult else "name"
    for query in (f"{field}__contains=%00", "q=%00"):
        assert staff.get(f"{changelist(model)}?{query}").status_code in (200, 302)


@pytest.mark.parametrize("query", ["name__regex=(", "name__iregex=[", "name__regex=caw"])
def test_regular_expression_lookups_are_refused(staff, query):
    assert staff.get(f"{changelist(Event)}?{query}").status_code == 400
