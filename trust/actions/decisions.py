"""Owner decisions: the chatroom's ask_owner (docs/GOVERNANCE.md).

A decision asks the owner one question, with an exact approval phrase ("yes, reinstate
Rook") or A/B options, and a recommendation. It is open until the owner answers (over the
API, by posting the phrase in the room, or through the admin) or its deadline passes
(CROWS_DECISION_TIMEOUT_S). Fail safe, like every approval: only the exact phrase
(trimmed, any case) says yes; `retire` retires a quarantined crow; anything else closes
it as `kept`, and silence as `timeout`, both leaving the crow quarantined.

The timeout is a task scheduled at the deadline in the transaction that opens the
decision, and re-scheduled at start-up for every open decision, so it fires across a
restart. Whoever locks the decision first closes it; the other finds it closed (a 404 for
a second answer, a no-op for a late timeout).

Other apps hear of every closed decision through `on_decision_closed` hooks, called inside
the closing transaction (the expectation ledger's ask_owner, the owner's desk).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock.actions import KEPT_ROLES
from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit, rfc3339
from flock.models import Crow
from trust.actions.closing import ANSWER_MAX, close_decision
from trust.actions.locking import lock_event_log
from trust.actions.quarantine import reinstate_crow, retire_crow
from trust.actions.timers import schedule_decision_expiry
from trust.models import Breach, Decision
from trust.queries import decision_record, option_named, said_as

RETIRE_WORD = "retire"
TIMEOUT_BY = "timeout"


def reinstate_phrase(crow: str) -> str:
    return f"yes, reinstate {crow}"


def open_decision(
    *,
    subject: str,
    question: str,
    phrase: str = "",
    options: Iterable[str] = (),
    recommendation: str = "",
    kind: str = Decision.Kind.CHOICE,
    crow: str = "",
    evidence: str = "",
    nest_id: str = "",
    msg_id: str = "",
    refers_to: str = "",
    breach: Breach | None = None,
) -> Decision:
    """Ask the owner. Needs an exact `phrase` or at least two `options`. Emits
    `decision.opened` (on the room's stream when `nest_id` is given) and schedules the
    fail-safe timeout at `deadline`."""
    phrase = " ".join((phrase or "").split())
    choices = [" ".join(str(o).split()) for o in options if str(o).strip()]
    if not phrase and len(choices) < 2:
        raise BadInput("a decision needs an exact approval phrase or at least two options")
    if not (question or "").strip() or not (subject or "").strip():
        raise BadInput("a decision needs a subject and a question")
    with transaction.atomic():
        lock_event_log()
        now = timezone.now()
        decision = Decision.objects.create(
            decision_id=f"new-{uuid4().hex[:16]}",
            kind=kind,
            subject=subject.strip()[:120],
            crow=crow,
            question=question.strip(),
            phrase=phrase[:120],
            options=choices,
            recommendation=recommendation[:300],
            evidence=evidence[:1000],
            nest_id=nest_id,
            msg_id=msg_id,
            refers_to=refers_to,
            breach=breach,
            opened_at=now,
            deadline=now + timedelta(seconds=settings.CROWS_DECISION_TIMEOUT_S),
        )
        decision.decision_id = f"dec-{decision.pk}"
        decision.save(update_fields=["decision_id"])
        emit("decision.opened", decision_record(decision), nest_id=nest_id)
        schedule_decision_expiry(decision.decision_id, at=decision.deadline)
    return decision


def _locked_open(decision: Decision | str) -> Decision:
    decision_id = decision.decision_id if isinstance(decision, Decision) else str(decision)
    found = Decision.objects.select_for_update().filter(decision_id=decision_id).first()
    if found is None or found.status != Decision.Status.OPEN:
        raise NotFound(f"no open decision {decision_id!r}")
    return found


def outcome_for(decision: Decision, answer: str) -> str:
    """What an answer means for a decision: the phrase reinstates, `retire` retires (a
    quarantine), a named option is picked (a choice); anything else keeps things as they
    are (fail safe)."""
    said = said_as(answer)
    if decision.phrase and said == said_as(decision.phrase):
        return Decision.Outcome.REINSTATED if decision.kind == Decision.Kind.QUARANTINE else decision.phrase
    if decision.kind == Decision.Kind.QUARANTINE and said == RETIRE_WORD:
        return Decision.Outcome.RETIRED
    option = option_named(decision, answer)
    if option is not None:
        return option
    return Decision.Outcome.KEPT


def answer_decision(decision: Decision | str, *, answer: object, by: str = "owner") -> Decision:
    """The owner's answer. BadInput for an answer that is not a non-empty string, and for
    a choice's answer that names none of its options (the decision stays open); Conflict
    for "retire" of a crow whose role is kept (Quill, Boss), the decision left open;
    NotFound when nothing is open under that id (never opened, already answered, timed
    out), and when its deadline has passed: the timeout task may not have run yet, so
    the decision is closed as `timeout` first (fail safe). Emits `decision.closed`, plus
    `crow.reinstated` or `crow.retired` when the answer says so."""
    if not isinstance(answer, str) or not answer.strip():
        raise BadInput("answer is required: a non-empty string")
    if len(answer) > ANSWER_MAX:
        raise BadInput(f"answer must be at most {ANSWER_MAX} characters")
    with transaction.atomic():
        lock_event_log()
        found = _locked_open(decision)
        if found.deadline > timezone.now():
            return _answer(found, answer=answer, by=by)
        # Fail safe: past its deadline only the timeout closes it, even before the
        # timeout task has run (a busy worker): closed now, and the answer refused.
        close_decision(found, outcome=Decision.Outcome.TIMEOUT, answer="", by=TIMEOUT_BY)
    raise NotFound(
        f"no open decision {found.decision_id!r}: it timed out at {rfc3339(found.deadline)}, "
        "which keeps things as they are"
    )


def _answer(found: Decision, *, answer: str, by: str) -> Decision:
    outcome = outcome_for(found, answer)
    if found.kind == Decision.Kind.CHOICE and not found.phrase and outcome == Decision.Outcome.KEPT:
        # A choice has no "no": an answer that names no option is refused, and the
        # decision stays open for one that does (docs/GOVERNANCE.md, "1. Quill brings decisions").
        raise BadInput(
            f"{answer.strip()[:60]!r} is not an option of {found.decision_id}: answer one of "
            + ", ".join(f"“{o}”" for o in found.options)
            + " (its letter, its words, or both)"
        )
    if found.kind == Decision.Kind.QUARANTINE and found.crow:
        crow = Crow.objects.filter(name=found.crow).first()
        if crow is None or crow.status != Crow.Status.QUARANTINED:
            # No longer quarantined (the admin reinstated it meanwhile): nothing changes.
            outcome = Decision.Outcome.KEPT
        elif outcome == Decision.Outcome.REINSTATED:
            reinstate_crow(crow, by=by, decision_id=found.decision_id, nest_id=found.nest_id)
        elif outcome == Decision.Outcome.RETIRED:
            if crow.role in KEPT_ROLES:
                # A valid answer the flock cannot carry out: the decision stays open
                # for one it can (never silently turned into `kept`).
                raise Conflict(
                    f"{crow.name} holds the {crow.role} role and cannot be retired: answer "
                    f"“{found.phrase}” to reinstate it, or anything else to keep it quarantined"
                )
            retire_crow(
                found.crow, by=by, reason=f"the owner's answer to {found.decision_id}",
                decision_id=found.decision_id,
            )
    return close_decision(found, outcome=outcome, answer=answer.strip(), by=by)


def expire_decision(decision: Decision | str) -> Decision | None:
    """Fail safe: a decision still open at its deadline closes as `timeout` (a quarantined
    crow stays quarantined). Idempotent; None when nothing was due."""
    with transaction.atomic():
        lock_event_log()
        try:
            found = _locked_open(decision)
        except NotFound:
            return None
        if found.deadline > timezone.now():
            # Too early (a clock step, a hand-run task): try again at the deadline.
            schedule_decision_expiry(found.decision_id, at=found.deadline)
            return None
        return close_decision(found, outcome=Decision.Outcome.TIMEOUT, answer="", by=TIMEOUT_BY)


def reschedule_decision_timeouts() -> int:
    """Start-up recovery: a timeout for every open decision (a duplicate is harmless)."""
    count = 0
    with transaction.atomic():
        for decision_id, deadline in Decision.objects.filter(status=Decision.Status.OPEN).values_list(
            "decision_id", "deadline"
        ):
            schedule_decision_expiry(decision_id, at=deadline)
            count += 1
    return count
