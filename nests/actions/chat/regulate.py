"""Boss regulates the flock (docs/GOVERNANCE.md, "3. Boss runs the flock"): it proposes, the
owner decides. Nothing here spends money on its own (idle crows: nests.actions.chat.idle).

- Budgets: `budget_watch`, a reactor, has Boss say once a day, when a room's tokens for
  the day run low, that they do, and propose a top-up as a decision; the phrase tops the
  room up (`top_up_on_approval`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from flock.models import Crow
from flock.vocab import OWNER
from nests import queries
from nests.actions.chat.budgets import LOW_TOKENS_SHARE, top_up_budget
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.models import Nest, NestMessage
from trust.actions import open_decision
from trust.models import Decision

TOP_UP_SUBJECT = "top-up "


def top_up_phrase(nest_id: str) -> str:
    return f"yes, top up {nest_id}"


def top_up_tokens() -> int:
    """What Boss proposes to add: half a day's tokens (at least one)."""
    return max(1, settings.CROWS_NEST_TOKEN_BUDGET // 2)


def propose(*, subject: str, question: str, phrase: str, recommendation: str, said: NestMessage,
            evidence: str, crow: str = "") -> Decision:
    """Boss's proposal to the owner, opened on the message that says it: a decision only
    the exact phrase says yes to (anything else, or nothing, leaves things as they are)."""
    return open_decision(
        subject=subject, question=question, phrase=phrase, recommendation=recommendation,
        kind=Decision.Kind.CHOICE, crow=crow, nest_id=said.nest.nest_id, msg_id=said.msg_id, evidence=evidence,
    )


def proposed(subject: str, *, since: datetime | None = None) -> bool:
    rows = Decision.objects.filter(kind=Decision.Kind.CHOICE, subject=subject)
    rows = rows.filter(status=Decision.Status.OPEN) if since is None else rows.filter(opened_at__gte=since)
    return rows.exists()


def approved(decision: Decision, subject_prefix: str) -> bool:
    """Whether a closed decision is the owner's yes to a proposal of this kind: a choice on
    a subject with this prefix, answered with its exact phrase."""
    return (
        decision.kind == Decision.Kind.CHOICE
        and decision.subject.startswith(subject_prefix)
        and bool(decision.phrase)
        and decision.outcome == decision.phrase
    )


def budget_watch(posted: Posted) -> Effects:
    """Boss says, once a day per room, that the room's tokens run low, and proposes a
    top-up as an owner decision (said and opened together)."""
    # Tokens are spent only by crows' calls, so only a crow's post can find them low (and
    # an owner's post, the busiest, reads nothing here).
    if posted.harness or posted.crow is None:
        return NOTHING
    room = posted.room
    budget = queries.read_budget(room)
    allowed, left = queries.tokens_allowed(budget), queries.tokens_left(budget)
    if allowed <= 0 or left > allowed * LOW_TOKENS_SHARE:
        return NOTHING
    boss = queries.boss()
    if boss is None or boss.status != Crow.Status.ACTIVE:
        return NOTHING
    day = queries.budget_day()
    subject = f"{TOP_UP_SUBJECT}{room.nest_id} {day.isoformat()}"
    if proposed(subject, since=timezone.now() - timedelta(days=1)):
        return NOTHING
    phrase, extra = top_up_phrase(room.nest_id), top_up_tokens()

    def open_it(said: NestMessage) -> None:
        propose(
            subject=subject, said=said, phrase=phrase,
            question=f"Top up {room.name} ({room.nest_id}) by {extra:,} tokens for today?",
            recommendation=f"Top it up if the work in {room.name} should go on today; otherwise the crows rest until tomorrow.",
            evidence=f"{left:,} of {allowed:,} tokens left today",
        )

    return Effects(say=[Say(
        author=boss.name, to=OWNER, then=open_it,
        text=(
            f"@owner, this room's budget is nearly spent: {left:,} of {allowed:,} tokens left today. "
            f"I propose a top-up of {extra:,} tokens: say exactly “{phrase}” (or answer on the card). "
            "Anything else, or nothing, and the crows rest when it runs out."
        ),
    )])


def top_up_on_approval(decision: Decision) -> None:
    """The owner's phrase on Boss's top-up proposal tops the room up; wired as a trust
    `on_decision_closed` hook (nests/wiring.py)."""
    if not approved(decision, TOP_UP_SUBJECT):
        return
    room = Nest.objects.filter(nest_id=decision.nest_id).first()
    if room is not None:
        top_up_budget(room, tokens=top_up_tokens())
