"""Requests and claims (docs/CHATROOM.md).

solo/split: the first claim wins; a later one is refused (409 over the API, a review
comment from a brain). conspiracy: every claim stands (docs/CHATROOM.md), each a distinct
lens, one per crow; dispatch invokes lenses one after another up to CONSPIRACY_CAP, and a
crow that claims past it on its own still holds its claim. All of it runs inside
post_message's transaction, after the nest row is locked, so two claims on one request
are decided one after the other; the partial unique constraint on Claim is the
database's own word on the same rule.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from flock.errors import Conflict
from flock.events import lock_event_log
from flock.vocab import OWNER, MessageKind
from nests.models import ChatRequest, Claim, NestMessage
from nests.queries import request_for  # noqa: F401  (the chat core reads it here)

# How many lenses dispatch invokes, one after another (docs/CHATROOM.md "Claims").
CONSPIRACY_CAP = 3


def claim_refusal(request: ChatRequest, *, crow: str) -> str:
    """Why `crow` may not claim `request` now, or "" when it may."""
    claims = list(request.claims.all())
    msg_id = request.message.msg_id
    if request.state == ChatRequest.State.RELAYED:
        return f"{msg_id} was relayed to {request.relayed_to}; claim it there"
    if request.mode == ChatRequest.Mode.CONSPIRACY:
        if any(c.crow == crow for c in claims):
            return f"{crow} already has a lens on {msg_id}"
        return ""
    if claims:
        holder = claims[0].crow
        who = "you" if holder == crow else holder
        return f"{msg_id} is already claimed by {who} ({claims[0].message.msg_id}); first claim wins"
    return ""


def route_refusal(request: ChatRequest) -> str:
    """Why Quill may not route `request` to a crow by name now (a crow claimed it, or an
    answer closed it, since the owner posted it), or "" when it may."""
    if request.state == ChatRequest.State.OPEN:
        return ""
    return f"{request.message.msg_id} is {request.state} already, so it is not routed"


def record_request(
    message: NestMessage,
    *,
    mode: str,
    task_type: str,
    requester: str = "",
    relayed_from: str = "",
) -> ChatRequest:
    return ChatRequest.objects.create(
        message=message,
        nest=message.nest,
        requester=requester or message.author,
        addressed=message.to if message.to != OWNER else "",
        mode=mode,
        task_type=task_type,
        relayed_from=relayed_from,
    )


def claim_request(request: ChatRequest, *, crow: str, message: NestMessage, lens: str = "") -> Claim:
    """Record `crow`'s claim; the caller checked claim_refusal under the nest lock."""
    try:
        with transaction.atomic():
            lock_event_log()
            claim = Claim.objects.create(
                request=request,
                message=message,
                crow=crow,
                exclusive=request.mode != ChatRequest.Mode.CONSPIRACY,
                lens=lens[:200],
            )
    except IntegrityError:
        # Only reachable if a claim slipped past the nest lock (another database writer);
        # the constraint still keeps the first claim the only one.
        raise Conflict(f"{request.message.msg_id} is already claimed; first claim wins") from None
    reopened = request.mode == ChatRequest.Mode.CONSPIRACY and request.state == ChatRequest.State.DELIVERED
    if request.state == ChatRequest.State.OPEN or reopened:
        # A lens offered after the others delivered is work under way again, until it
        # delivers too (record_deliver).
        request.state = ChatRequest.State.CLAIMED
        request.save(update_fields=["state"])
    return claim


def record_deliver(request: ChatRequest, *, crow: str, message: NestMessage) -> None:
    """A deliver closes the crow's claim; the request is delivered once every claim is."""
    claim = request.claims.filter(crow=crow, delivered__isnull=True).first()
    if claim is not None:
        claim.delivered = message
        claim.save(update_fields=["delivered"])
    open_claims = request.claims.filter(delivered__isnull=True).exists()
    if request.mode != ChatRequest.Mode.CONSPIRACY or not open_claims:
        if request.state in (ChatRequest.State.OPEN, ChatRequest.State.CLAIMED):
            request.state = ChatRequest.State.DELIVERED
            request.save(update_fields=["state"])


def record_decline(request: ChatRequest, *, crow: str) -> None:
    """An addressed crow's decline closes the request; any other crow's leaves it open for
    the next best crow."""
    if request.addressed == crow and request.state == ChatRequest.State.OPEN:
        request.state = ChatRequest.State.DECLINED
        request.save(update_fields=["state"])


def decliners(request: ChatRequest) -> set[str]:
    return set(
        NestMessage.objects.filter(nest=request.nest, kind=MessageKind.DECLINE, refers_to=request.message.msg_id)
        .values_list("author", flat=True)
    )


def mark_relayed(request: ChatRequest, *, to_msg_id: str) -> None:
    request.state = ChatRequest.State.RELAYED
    request.relayed_to = to_msg_id
    request.save(update_fields=["state", "relayed_to"])


def mark_answered(message: NestMessage) -> None:
    """Quill or Boss carried out an owner's request themselves: it is delivered."""
    with transaction.atomic():
        lock_event_log()
        request = ChatRequest.objects.select_for_update().filter(message=message).first()
        if request is not None and request.state == ChatRequest.State.OPEN:
            request.state = ChatRequest.State.DELIVERED
            request.save(update_fields=["state"])
