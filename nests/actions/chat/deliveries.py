"""Trust in the chatroom (docs/CHATROOM.md "Deliveries and trust").

A crow's `deliver` on a request is posted as always, back to the requester, and is judged
like a list item's output, through the same machinery: a crow below trusted for the
request's task type opens an approval (`item_id` = the deliver's msg_id, target
`output`, the fail-safe timeout), answered with `POST /api/verdicts`; the owner's approve
or reject moves that crow's trust exactly as for lists. A trusted crow's delivery gets
the verdict `auto`, which the owner may overrule afterwards. A rejected, timed-out or
overruled delivery is marked so in the room.

Quill and Boss are not judged here: their deliveries carry other crows' work back (a
relay) or report an order they carried out, and their rights come from their roles.
"""

from __future__ import annotations

from flock.models import Crow
from flock.personas import TASK_TYPES
from flock.vocab import HARNESS, TRUSTED
from nests import queries
from nests.actions.chat.room import say
from nests.models import ChatRequest, NestMessage
from trust.actions import open_approval, record_auto_verdict
from trust.models import Target, Verdict

JUDGED_ROLES = (Crow.Role.WORKER,)


def review_delivery(message: NestMessage, *, request: ChatRequest, crow: Crow) -> None:
    """Open the owner's approval on a delivery, or record `auto` for a trusted crow. Call
    inside the transaction that stored the deliver, so both commit together."""
    if crow.role not in JUDGED_ROLES:
        return
    task_type = request.task_type if request.task_type in TASK_TYPES else "chat"
    nest_id = message.nest.nest_id
    if queries.trust_level(crow.name, task_type) >= TRUSTED:
        record_auto_verdict(
            message.msg_id, target=Target.OUTPUT, nest_id=nest_id, task_type=task_type, holders=[crow.name]
        )
        return
    open_approval(
        message.msg_id, target=Target.OUTPUT, nest_id=nest_id, task_type=task_type, holders=[crow.name]
    )


def mark_delivery_verdict(verdict: Verdict) -> None:
    """The `on_verdict` hook: a chat delivery the owner rejected, or that timed out, is
    marked in its room by the harness (the request's requester sees it was not taken);
    one the owner corrected before approving it carries the owner's text into the room
    (docs/REVIEW.md), since the crow's message itself stays as the crow wrote it."""
    if not verdict.nest_id or verdict.target != Target.OUTPUT:
        return
    if verdict.passed and not verdict.edited_text:
        return
    delivered = NestMessage.objects.filter(msg_id=verdict.item_id).first()
    if delivered is None:
        return
    if verdict.passed:
        text = f"The owner approved {delivered.msg_id}, {delivered.author}'s delivery, corrected to:\n\n{verdict.edited_text}"
    elif verdict.verdict == Verdict.Value.REJECTED:
        text = f"The owner rejected {delivered.msg_id}, {delivered.author}'s delivery: it does not stand."
        if verdict.reason:
            text += f" The owner's reason: {verdict.reason}"
    else:
        text = (
            f"No verdict on {delivered.msg_id}, {delivered.author}'s delivery, came in time: "
            "it counts as rejected (fail safe)."
        )
    say(delivered.nest, author=HARNESS, text=text, refers_to=delivered.msg_id)


def mark_delivery_overruled(verdict: Verdict) -> None:
    """The `on_overrule` hook: a trusted crow's delivery the owner overruled after the fact
    no longer stands, and its room hears it as it hears a rejection."""
    if not verdict.nest_id:
        return
    delivered = NestMessage.objects.filter(msg_id=verdict.item_id).first()
    if delivered is None:
        return
    text = f"The owner overruled {delivered.msg_id}, {delivered.author}'s delivery: it no longer stands."
    if verdict.reason:
        text += f" The owner's reason: {verdict.reason}"
    say(delivered.nest, author=HARNESS, text=text, refers_to=delivered.msg_id)
