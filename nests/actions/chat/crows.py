"""Invoking a crow: read the room, let the crow's brain think, and post its reply through
post_message, the same action the API uses, so the reply is rate-limited, tagged by Jev,
numbered and dispatched like any other post (a claim it makes invokes it again to deliver).

Quill and Boss answer some owner messages from the database rather than from their brains:
a status question, a relay into another room, a hatch/nest/retire order. The brain
cannot be trusted to know who claimed what, or to have hatched a crow.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from django.db import transaction
from django.utils import timezone

from flock.actions import record_flight
from flock.brains import BrainRequest, get_brain, prompt_text, prompt_tokens
from flock.brains.header import format_header, header_body, parse_header
from flock.errors import CrowsError
from flock.events import lock_event_log
from flock.models import Crow
from flock.queries import persona_of
from flock.vocab import OWNER, MessageKind
from nests import queries
from nests.actions.chat import boss, budgets, quill, sentry
from nests.actions.chat.claims import mark_answered
from nests.actions.chat.ledger import restart_timers
from nests.actions.chat.replies import Reply, Skip, post_reply, say_for
from nests.actions.chat.status_question import task_words
from nests.models import ChatRequest, Invocation, NestMessage
from nests.queries_ledger import answered, context_for
from nests.queries_memory import memory_lines, remember

log = logging.getLogger("crows.chat")

CHAT_MAX_TOKENS = 700
# The shortest reply worth a call: with less left for it, the room's tokens are spent.
MIN_REPLY_TOKENS = 64
HISTORY = 20
TEXT_MAX = 2000
WHY = {
    "addressed": "you were addressed by name, so you must respond: claim, deliver, or decline with a reason",
    "direct": "this is your direct chat with the owner: you always answer",
    "fit": "you are the best-fitting crow allowed to claim this open request",
    "redispatch": "the crow picked before you declined; you are the next best fit",
    "lens": "this is a conspiracy request: several crows each give a distinct reading",
    "claim_deliver": "you claimed this request: deliver it now",
    "quill_default": "the owner asked the room a question with nobody named, and you are the owner's contact",
    "quill_route": "nobody in the room may claim this open request yet; route it to a crow by name",
    "relay_back": "a result came back for a request you relayed for the owner",
    "nudge": "the harness nudged you about something you said you would do",
    "debate": "the moderator cued you in a debate the owner asked for: speak to your stance, in your turn",
    "decision": "the owner's decision you asked for is closed: act on what was chosen; if nobody chose, do not go ahead",
}


def _start(invocation_id: int) -> Invocation | None:
    with transaction.atomic():
        lock_event_log()
        inv = (
            Invocation.objects.select_for_update()
            .select_related("nest", "trigger", "trigger__nest")
            .filter(id=invocation_id)
            .first()
        )
        # RUNNING again means a process died mid-invocation and the task was re-queued.
        if inv is None or inv.status not in (Invocation.Status.QUEUED, Invocation.Status.RUNNING):
            return None
        if inv.reply_id:
            # It died after its reply committed: the work is done, only the record lagged.
            inv.status = Invocation.Status.DONE
            inv.finished_at = timezone.now()
            inv.save(update_fields=["status", "finished_at"])
            return None
        inv.status = Invocation.Status.RUNNING
        inv.save(update_fields=["status"])
    return inv


def _finish(inv: Invocation, status: str, *, reply: NestMessage | None = None, tokens: int = 0, error: str = "") -> Invocation:
    inv.status = status
    inv.reply = reply
    inv.tokens = tokens
    inv.error = error[:2000]
    inv.finished_at = timezone.now()
    inv.save(update_fields=["status", "reply", "tokens", "error", "finished_at"])
    # A crow's expectations wait while it is speaking; once it has had its say, their
    # clocks go on (after a nudge, one due period from now).
    restart_timers(inv)
    return inv


def _history(inv: Invocation, crow: Crow) -> list[dict[str, str]]:
    """The room's recent log as the crow's conversation: its own posts as its turns (with
    their headers, so it knows what it has claimed), everyone else's as the user's."""
    rows = list(
        NestMessage.objects.filter(nest=inv.nest, n__lte=inv.trigger.n).order_by("-n")[:HISTORY]
    )[::-1]
    turns = []
    for m in rows:
        if m.author == crow.name:
            verb = {"claim": "CLAIM", "deliver": "RESULT", "decline": "DECLINE"}.get(m.kind)
            head = f"{format_header(verb, m.refers_to)} " if verb and m.refers_to else ""
            turns.append({"role": "assistant", "content": f"{head}{m.text}"})
        else:
            to = f" to @{m.to}" if m.to else ""
            turns.append({"role": "user", "content": f"{m.author}{to} [{m.msg_id}, {m.kind}]: {m.text}"})
    return turns


def _system(inv: Invocation, crow: Crow, request: ChatRequest | None, note: str) -> str:
    members = ", ".join([OWNER, *queries.crow_members(inv.nest)])
    lines = [
        f"Room: {inv.nest.name} ({inv.nest.nest_id}); members: {members}.",
        f"Why you are speaking now: {WHY.get(inv.reason, inv.reason)}.",
        f"Budget: {note}",
    ]
    if request is not None:
        claims = list(request.claims.all())
        if request.mode == ChatRequest.Mode.CONSPIRACY:
            others = "; ".join(f"{c.crow} ({c.lens or 'own lens'})" for c in claims if c.crow != crow.name)
            lines.append(
                f"This request takes several readings. Your lens: {crow.strength}. "
                + (f"Readings so far: {others}. Do not restate them." if others else "You are the first.")
            )
        elif claims and claims[0].crow != crow.name:
            lines.append(f"{claims[0].crow} already claimed it: you may review, but not redo it.")
    return "\n".join(lines)


def _brain_reply(inv: Invocation, crow: Crow, answer: tuple[NestMessage, ChatRequest | None]) -> tuple[str, int, str, int]:
    """(text, tokens, error, tokens_out) from the crow's brain; text "" when it failed.
    `answer`: what the invocation answers (`answered`)."""
    ref, request = answer
    # Read, not locked: what is left decides whether to call and how long the reply may
    # be; the charge after the call is the locked write (budgets.charge_tokens).
    budget = budgets.read_budget(inv.nest)
    left = budgets.tokens_left(budget)
    note = budgets.budget_note(budget)
    if left <= 0:
        return "", 0, budgets.TOKENS_SPENT, 0
    requester = request.requester if request is not None else ref.author
    context: dict[str, object] = {
        "msg_id": ref.msg_id,
        "requester": requester,
        "budget_note": note,
        "nest_id": inv.nest.nest_id,
        "to": ref.to,
        "listener": requester,
        "request_text": task_words(ref.text),
        "reason": "",
        # The message that called this crow in, for brains that answer by rule (script:).
        "trigger_msg_id": inv.trigger.msg_id,
        "trigger_refers_to": inv.trigger.refers_to,
        "trigger_author": inv.trigger.author,
        "trigger_text": inv.trigger.text,
    }
    if inv.expect:
        context["expect"] = inv.expect
    debate = context_for(inv.nest, crow.name)
    if debate is not None:
        context["debate"] = debate
    # One crow, many rooms: what it said and was told elsewhere, marked with the room.
    memories = remember(crow.name, query=f"{inv.trigger.text} {ref.text}", exclude_nest=inv.nest)
    if memories:
        context["memory"] = memories
    if request is not None:
        context.update(mode=request.mode, task_type=request.task_type)
        if request.mode == ChatRequest.Mode.CONSPIRACY:
            context["lens"] = crow.strength
    brain_request = BrainRequest(
        persona=persona_of(crow),
        task="chat",
        messages=_history(inv, crow),
        max_tokens=CHAT_MAX_TOKENS,
        context=context,
        system="\n\n".join(p for p in (_system(inv, crow, request, note), memory_lines(memories)) if p),
    )
    # The prompt is charged too: the call is made only if the prompt and a short reply
    # fit in what the room has left today, and the reply is capped to the rest, so the
    # day's tokens are not overrun (by more than the estimate's error, for a real model).
    prompt = prompt_tokens(brain_request)
    if prompt + MIN_REPLY_TOKENS > left:
        return "", 0, budgets.TOKENS_SPENT, 0
    brain_request = replace(brain_request, max_tokens=min(CHAT_MAX_TOKENS, left - prompt))
    reply = get_brain(crow.brain_spec).think(brain_request)
    tokens = int(reply.tokens_in) + int(reply.tokens_out)
    record_flight(
        crow=crow.name,
        provider=reply.provider,
        model=reply.model,
        task="chat",
        ok=reply.ok,
        tokens_in=reply.tokens_in,
        tokens_out=reply.tokens_out,
        latency_ms=reply.latency_ms,
        error=reply.error,
        task_type=request.task_type if request is not None else "chat",
        nest_id=inv.nest.nest_id,
        msg_id=ref.msg_id,
        prompt=prompt_text(brain_request),  # what the crow was asked, as list flights log it
    )
    if tokens:
        budgets.charge_tokens(inv.nest, tokens)
    if not reply.ok:
        return "", tokens, reply.error or "the brain gave no reason", 0
    if not reply.text.strip():
        return "", tokens, "the brain said nothing", 0
    return reply.text.strip(), tokens, "", int(reply.tokens_out)


def _shape(inv: Invocation, raw: str, ref: NestMessage) -> Reply:
    """A brain's text as a post: its header re-pointed at a message of this room (a brain
    may invent ids), the body cut to the text cap, and a bare header given words. `ref`:
    the message the invocation answers."""
    header = parse_header(raw)
    if header is None:
        return Reply(text=_cut(raw), refers_to=ref.msg_id)
    body = header_body(raw, header)
    if header.verb == "REFER":
        return Reply(text=_cut(body), kind=MessageKind.REFER, refers_to=ref.msg_id)
    # The Sentry passed the reply (sentry.check_reply, just before), so a header's message
    # is one of this room's: a header naming none answers the invocation's message.
    refers = header.refers_to or ref.msg_id
    # The header stays on the text so Jev reads the crow's words as it wrote them.
    return Reply(text=f"{format_header(header.verb, refers)} {_cut(body)}", refers_to=refers)


def _turn(inv: Invocation, reply: Reply) -> Reply:
    """A debater's (or the judge's) answer to the moderator's cue is its turn: talk, said
    to the moderator who cued it, whatever its words look like to Jev."""
    if inv.reason != "debate" or inv.trigger.author == OWNER:
        return reply
    return replace(reply, kind=MessageKind.SAY, to=inv.trigger.author, fixed=True)


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[: TEXT_MAX - 1].rstrip() + "…"


def _special(inv: Invocation, crow: Crow) -> object:
    """Quill's and Boss's answers built from the database (a Reply to post, or a message
    they already posted), or None for the brain."""
    if crow.role == Crow.Role.CHIEF_OF_STAFF:
        return boss.handle(inv, crow)
    if crow.role == Crow.Role.ASSISTANT:
        return quill.handle(inv, crow)
    return None


def invoke_crow(invocation_id: int) -> Invocation | None:
    """Run one queued invocation to its end: done, skipped or failed. Never raises for a
    domain reason; the invocation row says what happened."""
    inv = _start(invocation_id)
    if inv is None:
        return None
    crow = Crow.objects.filter(name=inv.crow).first()
    if crow is None or crow.status != Crow.Status.ACTIVE:
        state = crow.status if crow is not None else "gone"
        return _finish(inv, Invocation.Status.SKIPPED, error=f"{inv.crow} is {state}")
    try:
        special = _special(inv, crow)
        if isinstance(special, NestMessage):
            return _finish(inv, Invocation.Status.DONE, reply=special)
        if isinstance(special, Skip):
            return _finish(inv, Invocation.Status.SKIPPED, error=special.why)
        if isinstance(special, Reply):
            message = post_reply(inv, crow, special)
            if special.closes:
                mark_answered(inv.trigger)
            return _finish(inv, Invocation.Status.DONE, reply=message)
        # What the invocation answers, read once for the prompt, a failure's note and the reply.
        answer = answered(inv)
        ref = answer[0]
        text, tokens, error, tokens_out = _brain_reply(inv, crow, answer)
        if not text:
            if error == budgets.TOKENS_SPENT:
                with transaction.atomic():
                    lock_event_log()
                    budgets.announce_spent(inv.nest, budgets.locked_budget(inv.nest), tokens=True)
                return _finish(inv, Invocation.Status.SKIPPED, tokens=tokens, error=error)
            say_for(inv, f"{crow.name} could not answer {ref.msg_id}: {error}")
            return _finish(inv, Invocation.Status.FAILED, tokens=tokens, error=error)
        finding = sentry.check_reply(inv, crow, text, tokens_out=tokens_out)
        if finding is not None:
            # The Sentry read a breach in the reply: it is posted word for word, as the
            # evidence its flag refers to, and the crow is quarantined with it.
            evidence = Reply(text=_cut(text), kind=MessageKind.SAY, refers_to=ref.msg_id)
            message = post_reply(inv, crow, evidence, finding)
            return _finish(inv, Invocation.Status.DONE, reply=message, tokens=tokens)
        message = post_reply(inv, crow, _turn(inv, _shape(inv, text, ref)))
        return _finish(inv, Invocation.Status.DONE, reply=message, tokens=tokens)
    except CrowsError as exc:
        # A refusal of the reply itself (rate limit, membership lost meanwhile): logged on
        # the invocation; the room is not told, since telling it would be another post.
        log.info("invocation %s of %s ended: %s", inv.id, crow.name, exc.message)
        return _finish(inv, Invocation.Status.FAILED, error=exc.message)
    except Exception as exc:
        # A bug must not leave the invocation "running" forever; the task records the rest.
        _finish(inv, Invocation.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
