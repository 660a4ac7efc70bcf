"""Idle crows (docs/GOVERNANCE.md, "3. Boss runs the flock"): with CROWS_IDLE_RETIRE_DAYS
set, a daily task (nests/tasks_upkeep.py) has Boss propose retiring each worker crow idle
that long (nothing said, no flight, no claim held) as an owner decision with an exact
phrase, said in the open flock (`todo`). Only the phrase retires it
(`retire_on_approval`); anything else, or nothing, keeps it. Boss retires nobody on its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from flock.models import Crow, Flight
from flock.vocab import OWNER
from nests import queries
from nests.actions.chat import react
from nests.actions.chat.effects import Effects, Say
from nests.actions.chat.regulate import approved, propose, proposed
from nests.models import Nest, NestMessage
from trust.actions import retire_crow
from trust.models import Decision

RETIRE_SUBJECT = "retire "
IDLE_ROOM = "todo"


def retire_phrase(crow: str) -> str:
    return f"yes, retire {crow}"


def last_active(crow: Crow) -> datetime:
    """When the crow last did anything: spoke in a room, flew, or was hatched."""
    said = NestMessage.objects.filter(author=crow.name).aggregate(at=Max("created_at"))["at"]
    flew = Flight.objects.filter(crow=crow.name).aggregate(at=Max("created_at"))["at"]
    return max(t for t in (said, flew, crow.created_at) if t is not None)


def idle_crows(days: int, *, now: datetime | None = None) -> list[tuple[Crow, datetime]]:
    """Worker crows idle longer than `days` that hold no claim, with when they were last active."""
    cutoff = (now or timezone.now()) - timedelta(days=days)
    idle = []
    for crow in queries.worker_crows().filter(status=Crow.Status.ACTIVE):
        seen = last_active(crow)
        if seen < cutoff and not queries.open_claims_of(crow.name):
            idle.append((crow, seen))
    return idle


def propose_idle_retirements(*, now: datetime | None = None) -> list[Decision]:
    """Boss's daily look at the flock: one retire proposal (a decision) per idle crow that
    has none open. Retires nothing. Off (returns []) when CROWS_IDLE_RETIRE_DAYS is 0."""
    days = settings.CROWS_IDLE_RETIRE_DAYS
    boss = queries.boss()
    room = Nest.objects.filter(nest_id=IDLE_ROOM).first()
    if not days or boss is None or room is None:
        return []
    opened: list[Decision] = []
    for crow, seen in idle_crows(days, now=now):
        subject = f"{RETIRE_SUBJECT}{crow.name}"
        if proposed(subject):
            continue
        phrase = retire_phrase(crow.name)
        quiet_days = ((now or timezone.now()) - seen).days
        evidence = f"last active {seen.isoformat(timespec='seconds')}; no claim held"

        def open_it(said: NestMessage, crow: Crow = crow, subject: str = subject, phrase: str = phrase,
                    quiet_days: int = quiet_days, evidence: str = evidence) -> None:
            opened.append(propose(
                subject=subject, said=said, phrase=phrase, crow=crow.name, evidence=evidence,
                question=f"Retire {crow.name}? It has been idle {quiet_days} days.",
                recommendation=f"Retire it if you no longer need {crow.strength}; its history stays.",
            ))

        react.apply(Effects(say=[Say(
            author=boss.name, to=OWNER, then=open_it,
            text=(
                f"@owner, {crow.name} has been idle {quiet_days} days (longer than {days}). I propose retiring "
                f"it: say exactly “{phrase}” to retire it, or anything else to keep it. I retire nobody on my own."
            ),
        )]), room=Nest.objects.select_for_update().get(pk=room.pk))
    return opened


def retire_on_approval(decision: Decision) -> None:
    """The owner's phrase on an idle crow's proposal retires it, if it is still idle;
    wired as a trust `on_decision_closed` hook (nests/wiring.py)."""
    if not approved(decision, RETIRE_SUBJECT):
        return
    crow = Crow.objects.filter(name=decision.crow, status=Crow.Status.ACTIVE).first()
    if crow is None or queries.open_claims_of(crow.name):
        return
    retire_crow(crow, by=decision.answered_by or OWNER, reason=f"idle; the owner's answer to {decision.decision_id}",
                decision_id=decision.decision_id)
