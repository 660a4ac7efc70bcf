"""Quill, the assistant (docs/CHATROOM.md): the owner's default contact.

- A status question ("what's happening?") is answered from the database: every recent
  request of the room (or of the room named, or of every nest when asked in Quill's direct
  chat), who claimed it, what was delivered and what is still open.
- "ask the launch nest to draft the tweet" relays the request into that nest, addressed
  by name to its best-fitting crow, on the owner's behalf (the result goes to the owner,
  and Quill carries it back to the room the owner asked in).
- An unaddressed owner request nobody in the room may claim yet is routed the same way
  inside the room: addressing a crow by name gives even a stranger the right to answer.
Anything else Quill is asked goes to its brain.
"""

from __future__ import annotations

import re

from flock import jev as jev_service
from flock.errors import Conflict
from flock.models import Crow
from flock.vocab import OWNER, MessageKind
from nests import queries
from nests.actions.chat.boss import fresh_crow_name
from nests.actions.chat.claims import mark_relayed, request_for, route_refusal
from nests.actions.chat.dispatch import best_fit
from nests.actions.chat.replies import Reply, Skip, post_reply
from nests.actions.chat.status_question import (
    is_status_question,
    parse_crow_need,
    parse_relay,
    task_words,
    without_mentions,
)
from nests.models import ChatRequest, Invocation, Nest, NestMessage
from nests.queries_ledger import running_debate

SUMMARY_REQUESTS = 10
# What the owner made of a delivery, as the status answer says it.
REVIEW_WORDS = {
    "waiting": ", waiting for your approval",
    "rejected": ", which you rejected",
    "timeout": ", which timed out unapproved",
}
SUMMARY_NESTS = 5
GIST_WORDS = 10

# A lookahead, so overlapping candidates are all tried: "going on in ops" offers "in", then "ops".
NEST_WORD_RE = re.compile(r"(?=\b(?:in|on|at|for|of)\s+(?:the\s+)?(?P<nest>[\w-]+))", re.IGNORECASE)


def _gist(text: str) -> str:
    words = text.split()
    return " ".join(words[:GIST_WORDS]) + ("…" if len(words) > GIST_WORDS else "")


def summarise_nest(nest: Nest, *, asking: str = "") -> tuple[list[str], list[str]]:
    """Lines on a room's recent requests, and the msg_ids still open (unclaimed, claimed
    and not delivered, or delivered and rejected by the owner). Built from the request,
    claim and verdict rows, not a brain. `asking`: the status question being answered,
    which is no request to report on."""
    lines = []
    still_open = []
    requests = [
        r for r in queries.requests_in(nest, limit=SUMMARY_REQUESTS + 1)
        # Something a crow asked of the owner is not crow work (often Jev reading a crow's
        # own reply as a request).
        if r.message.msg_id != asking and r.message.to != OWNER
    ][-SUMMARY_REQUESTS:]
    statuses = [(request, queries.request_status(request)) for request in requests]
    reviews = queries.delivery_reviews([c["delivered"] for _, s in statuses for c in s["claims"] if c["delivered"]])
    for request, status in statuses:
        msg_id = status["msg_id"]
        to = f" to @{status['addressed']}" if status["addressed"] else ""
        if request.state == ChatRequest.State.RELAYED:
            where = f"relayed as {request.relayed_to}"
        elif status["claims"]:
            parts = []
            for c in status["claims"]:
                review = reviews.get(c["delivered"], "")
                done = f"delivered {c['delivered']}{REVIEW_WORDS.get(review, '')}" if c["delivered"] else "not delivered yet"
                parts.append(f"{c['crow']} claimed it ({c['msg_id']}), {done}")
                if not c["delivered"] or review in ("rejected", "timeout"):
                    still_open.append(msg_id)
            where = "; ".join(parts)
        elif request.state == ChatRequest.State.DECLINED:
            where = f"declined by {', '.join(status['declined_by']) or 'the crow asked'}"
        elif request.state == ChatRequest.State.DELIVERED:
            where = "delivered"
        else:
            declined = f" ({', '.join(status['declined_by'])} declined)" if status["declined_by"] else ""
            where = f"still open: nobody has claimed it{declined}"
            still_open.append(msg_id)
        mode = " [conspiracy]" if request.mode == ChatRequest.Mode.CONSPIRACY else ""
        lines.append(f"- {msg_id} from {status['requester']}{to}{mode}: “{_gist(task_words(status['text']))}” — {where}.")
    return lines, list(dict.fromkeys(still_open))


def debate_line(nest: Nest) -> str:
    """The room's running debate, if any, in one line for a status answer."""
    debate = running_debate(nest)
    if debate is None:
        return ""
    where = {
        "arguing": f"round {debate.round} of {debate.rounds}",
        "final": "final positions",
        "judging": f"@{debate.judge} judging",
    }.get(debate.phase, debate.phase)
    waiting = f", waiting on @{debate.cued}" if debate.cued else ""
    return (
        f"- Debate {debate.debate_id} ({' vs '.join(debate.crows)}) on “{_gist(debate.question)}”: "
        f"{where}{waiting}; say “stop the debate” to end it."
    )


def status_text(nests: list[Nest], *, asking: str = "") -> str:
    blocks = []
    for nest in nests:
        lines, still_open = summarise_nest(nest, asking=asking)
        debate = debate_line(nest)
        if debate:
            lines = [debate, *lines]
        if not lines:
            count = NestMessage.objects.filter(nest=nest).count()
            blocks.append(f"{nest.name} ({nest.nest_id}): no requests yet, {count} messages.")
            continue
        if still_open:
            tail = f"Still open: {', '.join(still_open)}."
        else:
            tail = "A debate is running; no request is open." if debate else "Nothing is open."
        blocks.append("\n".join([f"{nest.name} ({nest.nest_id}):", *lines, tail]))
    if not blocks:
        return "No nests have any requests yet."
    return "\n".join(blocks)


def _nests_asked_about(inv: Invocation, text: str) -> list[Nest]:
    for m in NEST_WORD_RE.finditer(without_mentions(text)):
        named = queries.find_nest(m.group("nest"))
        if named is not None:
            return [named]
    if inv.nest.kind == Nest.Kind.DIRECT:
        busy = [n for n in queries.nests_for_listing() if queries.requests_in(n, limit=1)]
        return busy[-SUMMARY_NESTS:] or queries.nests_for_listing()[:SUMMARY_NESTS]
    return [inv.nest]


def _cut(text: str, limit: int = 1900) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _task_type(text: str) -> str:
    try:
        return str(jev_service.ask("task_type", text).choice)
    except Exception:
        return "chat"


def _pick_crow(nest: Nest, trigger: NestMessage, task: str) -> tuple[str, float]:
    """The crow to address: the best fit among those allowed to claim, else the best fit
    of any worker in the room (being addressed gives a stranger the right to answer)."""
    task_type = _task_type(task)
    for level in (queries.REGULAR, queries.STRANGER):
        choice, scores = best_fit(nest, trigger, task, task_type, exclude=set(), need_level=level)
        if choice:
            return choice, scores[choice]
    return "", 0.0


def _relay(inv: Invocation, crow: Crow, nest_words: str, task: str) -> tuple[NestMessage | None, str]:
    trigger = inv.trigger
    target = queries.find_nest(nest_words)
    if target is None:
        known = ", ".join(n.nest_id for n in queries.nests_for_listing())
        return None, f"I can't find a nest called “{nest_words}”. The nests are: {known}."
    pick, fit = _pick_crow(target, trigger, task)
    text = f"@{pick}, from @owner: {task}" if pick else f"From @owner: {task}"
    relayed = post_reply(
        inv,
        crow,
        Reply(
            text=text, kind=MessageKind.REQUEST, nest_id=target.nest_id, on_behalf_of=OWNER, relayed_from=trigger.msg_id
        ),
    )
    own = ChatRequest.objects.filter(message=trigger).first()
    if own is not None:
        mark_relayed(own, to_msg_id=relayed.msg_id)
    who = f"asked @{pick} (best fit, {fit:.2f})" if pick else "nobody there fits it yet"
    return relayed, f"Relayed to {target.name} as {relayed.msg_id}; {who}. I'll carry the result back."


def _route(inv: Invocation, crow: Crow) -> NestMessage | Skip | str:
    """An owner's open request nobody here may claim: address the best-fitting crow,
    unless a crow claimed it (or it was answered) since the owner posted it."""
    trigger = inv.trigger
    own = ChatRequest.objects.filter(message=trigger).first()
    if own is not None and (refusal := route_refusal(own)):
        return Skip(refusal)
    pick, fit = _pick_crow(inv.nest, trigger, trigger.text)
    if not pick:
        return (
            "Nobody in this room can take that yet. Add a crow to the nest, or ask @Boss to hatch one."
        )
    text = without_mentions(trigger.text)
    try:
        relayed = post_reply(
            inv,
            crow,
            Reply(
                text=f"@{pick}, for @owner: {text}",
                kind=MessageKind.REQUEST,
                refers_to=trigger.msg_id,
                on_behalf_of=OWNER,
                relayed_from=trigger.msg_id,
            ),
        )
    except Conflict as taken:  # claimed in the moment since the check above
        return Skip(taken.message)
    # The original is marked relayed by the post itself, under the room's lock.
    return relayed


def boss_here(nest: Nest) -> bool:
    boss = queries.boss()
    return boss is not None and boss.status == Crow.Status.ACTIVE and boss.name in queries.crow_members(nest)


def _ask_boss(inv: Invocation, crow: Crow, name: str, purpose: str) -> NestMessage | Reply:
    """"I need a crow for X": the order to Boss, said in the room on the owner's behalf
    (so the owner sees it, and Boss answers it as it answers the owner's orders)."""
    trigger = inv.trigger
    boss = queries.boss()
    if not boss_here(inv.nest) or boss is None:
        return Reply(
            text=f"[ACK {trigger.msg_id}] Boss hatches crows, and Boss cannot take orders here right now.",
            refers_to=trigger.msg_id, to=OWNER, closes=True, fixed=True,
        )
    order = f"@{boss.name}, for @owner: hatch a crow named {name or fresh_crow_name()} for {purpose}"
    return post_reply(inv, crow, Reply(
        text=order, kind=MessageKind.REQUEST, to=boss.name, refers_to=trigger.msg_id,
        on_behalf_of=OWNER, relayed_from=trigger.msg_id, fixed=True,
    ))


def _relay_back(inv: Invocation) -> object:
    delivered = inv.trigger
    request = request_for(delivered.nest, delivered.refers_to)
    origin = NestMessage.objects.select_related("nest").filter(msg_id=request.relayed_from).first() if request else None
    if origin is None:
        return None
    body = _cut(delivered.text, 1700)
    return Reply(
        text=f"[RESULT {origin.msg_id}] From {delivered.nest.name}: @{delivered.author} delivered "
        f"{delivered.msg_id}.\n{body}",
        refers_to=origin.msg_id,
        to=OWNER,
        nest_id=origin.nest.nest_id,
    )


def handle(inv: Invocation, crow: Crow) -> object:
    """Quill's answer from the database (a Reply to post, or a message already posted), or
    None to let its brain answer."""
    trigger = inv.trigger
    if inv.reason == "relay_back":
        return _relay_back(inv)
    if inv.reason == "quill_route":
        routed = _route(inv, crow)
        if isinstance(routed, (NestMessage, Skip)):
            return routed
        return Reply(text=f"[ACK {trigger.msg_id}] {routed}", refers_to=trigger.msg_id, to=OWNER, fixed=True)
    if trigger.author != OWNER:
        return None
    if is_status_question(trigger.text):
        summary = status_text(_nests_asked_about(inv, trigger.text), asking=trigger.msg_id)
        return Reply(
            text=_cut(f"[ACK {trigger.msg_id}] Here's where we are.\n{summary}"),
            refers_to=trigger.msg_id,
            to=OWNER,
            closes=True,
            fixed=True,
        )
    need = parse_crow_need(trigger.text)
    if need is not None:
        return _ask_boss(inv, crow, *need)
    relay = parse_relay(trigger.text)
    if relay is not None:
        _, said = _relay(inv, crow, *relay)
        return Reply(text=f"[ACK {trigger.msg_id}] {said}", refers_to=trigger.msg_id, to=OWNER, fixed=True)
    return None
