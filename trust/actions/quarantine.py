"""Quarantine: the Sentry's one power over a crow (docs/GOVERNANCE.md).

A quarantined crow stays in its rooms but is never invoked and may not claim, deliver or
speak; only the owner lifts it (`reinstate_crow`, usually through a decision) or ends it
(`retire_crow`). The Sentry never hard-kills. The breach log is append-only.

Every action takes `by`: who did it ("Sentry", "owner", "admin:<username>", "timeout"),
carried into the event payloads, since the owner's desk and the admin call these too.
"""

from __future__ import annotations

from django.db import transaction

from flock.actions import crow_grounded, lock_for_grounding
from flock.actions import retire_crow as retire_flock_crow
from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit
from flock.models import Crow
from trust.actions.closing import withdraw_decisions
from trust.actions.locking import lock_event_log
from trust.models import Breach
from trust.payloads import CrowQuarantined, CrowReinstated

EVIDENCE_MAX = 1000


def _locked_crow(crow: Crow | str) -> Crow:
    name = crow.name if isinstance(crow, Crow) else (crow or "").strip().lstrip("@")
    found = Crow.objects.select_for_update().filter(name__iexact=name).first()
    if found is None:
        raise NotFound(f"no crow named {name!r}")
    return found


def record_breach(
    crow: str,
    *,
    kind: str,
    score: float,
    evidence: str,
    nest_id: str = "",
    msg_id: str = "",
    subject: str = "",
) -> Breach:
    """Append one breach to the log. `flagged` on the row says whether it is the crow's
    first on `subject` (a request or expectation id; the offending message when there is
    none): the Sentry flags at most once per crow per subject."""
    if kind not in Breach.Kind.values:
        raise BadInput(f"breach must be one of {', '.join(Breach.Kind.values)}, got {kind!r}")
    subject = subject or msg_id
    with transaction.atomic():
        seen = bool(subject) and Breach.objects.filter(crow=crow, subject=subject, flagged=True).exists()
        return Breach.objects.create(
            crow=crow,
            kind=kind,
            score=round(float(score), 4),
            evidence=evidence[:EVIDENCE_MAX],
            nest_id=nest_id,
            msg_id=msg_id,
            subject=subject,
            flagged=not seen,
        )


def quarantine_crow(
    crow: Crow | str,
    *,
    breach: Breach | str,
    evidence: str = "",
    score: float = 1.0,
    nest_id: str = "",
    msg_id: str = "",
    by: str = "Sentry",
) -> Crow:
    """Suspend a crow: it keeps its rooms and history but is not invoked and may not claim,
    deliver or speak until reinstated. `breach` is a logged Breach, or a breach kind (the
    admin quarantining by hand), which is logged here. Emits `crow.quarantined` (on the
    room's stream when `nest_id` is given). BadInput if it is not active."""
    with transaction.atomic():
        lock_event_log()
        lock_for_grounding(crow.name if isinstance(crow, Crow) else crow)
        found = _locked_crow(crow)
        if found.status != Crow.Status.ACTIVE:
            raise BadInput(f"{found.name} is {found.status}, not active; only an active crow can be quarantined")
        if found.role == Crow.Role.SENTRY:
            raise BadInput("the Sentry cannot quarantine itself")
        if not isinstance(breach, Breach):
            breach = record_breach(
                found.name, kind=breach, score=score, evidence=evidence, nest_id=nest_id, msg_id=msg_id
            )
        found.status = Crow.Status.QUARANTINED
        found.save(update_fields=["status"])
        emit(
            "crow.quarantined",
            CrowQuarantined(
                crow=found.name, breach=breach.kind, score=breach.score, evidence=breach.evidence,
                msg_id=breach.msg_id, by=by,
            ),
            nest_id=nest_id or breach.nest_id,
        )
        crow_grounded(found.name, "was quarantined")
    return found


def reinstate_crow(crow: Crow | str, *, by: str = "owner", decision_id: str = "", nest_id: str = "") -> Crow:
    """Lift a quarantine: the crow is active again. Emits `crow.reinstated`; any other open
    decision about it closes as `reinstated` (the admin reinstating directly). Conflict
    when the crow is not quarantined."""
    with transaction.atomic():
        lock_event_log()
        found = _locked_crow(crow)
        if found.status != Crow.Status.QUARANTINED:
            # The crow's state, not the request, is what is wrong: a 409 (docs/API.md).
            raise Conflict(f"{found.name} is {found.status}, not quarantined")
        found.status = Crow.Status.ACTIVE
        found.save(update_fields=["status"])
        emit(
            "crow.reinstated",
            CrowReinstated(crow=found.name, by=by, decision_id=decision_id),
            nest_id=nest_id,
        )
        withdraw_decisions(found.name, by=by, outcome="reinstated", except_id=decision_id)
    return found


def retire_crow(crow: Crow | str, *, by: str = "owner", reason: str = "", decision_id: str = "") -> Crow:
    """Retire a crow for good (quarantined or not): the flock's own retire, which emits
    `crow.retired` with `retired_by` = `by`; any open decision about it (but
    `decision_id`, the one being answered) closes as `retired`."""
    name = crow.name if isinstance(crow, Crow) else crow
    with transaction.atomic():
        lock_event_log()
        retired = retire_flock_crow(name, retired_by=by, reason=reason)
        withdraw_decisions(retired.name, by=by, outcome="retired", except_id=decision_id)
    return retired
