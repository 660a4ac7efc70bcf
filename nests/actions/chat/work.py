"""The work a message records (docs/CHATROOM.md "Claims", "Deliveries and trust"): the
request it opens, the claim it makes, the delivery it hands in (judged for trust), the
decline it says. It fills `posted.request` and `posted.claim` for the reactors after it,
and asks for nothing to be said or invoked.
"""

from __future__ import annotations

from flock.actions import log_jev_tag
from flock.vocab import HARNESS, MessageKind
from nests.actions.chat import claims, deliveries
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.models import ChatRequest


def react(posted: Posted) -> Effects:
    message, crow, target = posted.message, posted.crow, posted.target
    if posted.rights_note:
        # Kept as talk by speaking rights: it records nothing, and the room hears why.
        return Effects(say=[Say(author=HARNESS, text=posted.rights_note, to=message.author, refers_to=message.msg_id)])
    if message.kind == MessageKind.REQUEST and posted.request_facts is not None:
        mode, task_type, answers = posted.request_facts
        for answer in answers:
            log_jev_tag(answer, subject=message.msg_id, text=message.text, outcome={"mode": mode, "task_type": task_type})
        posted.request = claims.record_request(
            message, mode=mode, task_type=task_type, requester=posted.on_behalf_of, relayed_from=posted.relayed_from
        )
        return NOTHING
    if target is None:
        return NOTHING
    posted.request = target
    if posted.claiming:
        lens = crow.strength if crow is not None and target.mode == ChatRequest.Mode.CONSPIRACY else ""
        posted.claim = claims.claim_request(target, crow=message.author, message=message, lens=lens)
    elif message.kind == MessageKind.DELIVER and crow is not None:
        claims.record_deliver(target, crow=message.author, message=message)
        deliveries.review_delivery(message, request=target, crow=crow)
    elif message.kind == MessageKind.DECLINE and crow is not None:
        claims.record_decline(target, crow=message.author)
    return NOTHING
