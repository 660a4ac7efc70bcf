"""Who answers: the one crow a new message invokes, if any (docs/CHATROOM.md).

A reactor (nests.actions.chat.react): it runs in the transaction that stored the message,
with the nest row locked, and returns the crow to invoke; the loop spends the exchange
and queues the invocation. A message invokes at most one crow (Invocation.trigger is
unique), and only if the room's budget grants an exchange. The rules, in order:

1. A claim that stood invokes its claimer to deliver.
2. A deliver on a conspiracy request invokes the next lens (the best-fitting crow allowed
   to claim that has not yet), up to the cap; a deliver on a request Quill relayed from
   another room invokes Quill to carry the result back.
3. A decline by a crow the harness picked (not one the requester addressed) passes the
   request to the next best-fitting crow allowed to claim it.
4. In a direct chat, an owner message invokes that chat's crow.
5. An owner message addressed to a crow invokes it: it must respond. A crow's request to
   another crow does the same if the asking crow may open requests (trusted, or Quill/Boss).
6. An unaddressed request goes to the best-fitting crow allowed to claim it (a regular or
   trusted crow for the request's task type); if no crow may, an owner's request goes to
   Quill, who routes it to a crow by name.
7. An unaddressed owner question goes to Quill.
8. A harness nudge invokes the crow it is addressed to.
Before 1-7: the owner's correction of a crow's message invokes that crow alone, and a
crow's second answer to a correction (or another crow's) invokes no one.
Anything else (talk, claims that were refused, results, refers) invokes nobody.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from flock.actions import log_jev_tag
from flock.models import Crow
from flock.vocab import HARNESS_AUTHORS, OWNER, MessageKind
from nests import crow_fit, queries
from nests.actions.chat import budgets, rights
from nests.actions.chat.claims import CONSPIRACY_CAP, decliners
from nests.actions.chat.corrections import CORRECTION_REASON, answers_correction_again, corrected_crow
from nests.actions.chat.effects import Effects, Invoke, Posted
from nests.actions.chat.status_question import (
    RELAY_VERB_RES,
    is_question,
    is_status_question,
    parse_crow_need,
    parse_relay,
)
from nests.models import ChatRequest, Claim, Invocation, Nest, NestMessage
from nests.queries_ledger import cued_crow, expect_for_nudge, is_debate_order, is_stop_order, running_debate

FIT_VERSION = "crow-fit-2"


@dataclass
class Decision:
    crow: str
    reason: str
    expect: str
    fit: float | None = None
    candidates: dict[str, float] = field(default_factory=dict)


def _crow(name: str) -> Crow | None:
    return Crow.objects.filter(name=name).first()


def _candidates(nest: Nest, task_type: str, *, exclude: set[str], need_level: int) -> dict[Crow, int]:
    """The workers in the room who may take the work, in roster order, with their trust
    level for the task type."""
    members = set(queries.crow_members(nest))
    candidates: dict[Crow, int] = {}
    for crow in queries.worker_crows():
        if crow.name in exclude or crow.name not in members or crow.status != Crow.Status.ACTIVE:
            continue
        level = queries.trust_level(crow.name, task_type)
        if level >= need_level:
            candidates[crow] = level
    return candidates


def _weighted_fits(candidates: dict[Crow, int], text: str, task_type: str) -> dict[str, float]:
    scores: dict[str, float] = {}
    for crow, level in candidates.items():
        fit = crow_fit.typed_fit(text, crow, task_type)
        scores[crow.name] = round(crow_fit.weighted(fit, level, queries.recent_success(crow.name)), 6)
    return scores


def fit_scores(nest: Nest, text: str, task_type: str, *, exclude: set[str], need_level: int) -> dict[str, float]:
    """Crow-task fit for every worker in the room who may take the work (docs/GOVERNANCE.md).

    fit = Jev's fit_score of the request against the crow's profile, lifted a little when
    the request's task type is one the crow is best at, then weighted by the crow's trust
    for that task type and its recent results (the share of its last flights that came
    back): score = fit x (1 + 0.25 level) x (0.75 + 0.5 recent)."""
    return _weighted_fits(_candidates(nest, task_type, exclude=exclude, need_level=need_level), text, task_type)


def best_fit(
    nest: Nest, message: NestMessage, text: str, task_type: str, *, exclude: set[str], need_level: int
) -> tuple[str, dict[str, float]]:
    """The best-fitting crow ("" if none) and every score, logged as a JevTag so the owner
    can see why it was chosen. Best is nests.crow_fit's order: a crow whose task types
    include the request's first, then the higher score, then roster order."""
    candidates = _candidates(nest, task_type, exclude=exclude, need_level=need_level)
    if not candidates:
        return "", {}
    scores = _weighted_fits(candidates, text, task_type)
    choice = crow_fit.best_first(list(candidates), task_type, scores)[0]
    log_jev_tag(
        SimpleNamespace(
            question="crow_fit",
            choice=choice,
            probs=scores,
            band="high" if scores[choice] > 0 else "unsure",
            impl="fit_score",
            version=FIT_VERSION,
            latency_ms=0.0,
        ),
        subject=message.msg_id,
        text=text,
        outcome={"task_type": task_type, "need_level": need_level},
    )
    return choice, scores


def _relayed_from_elsewhere(request: ChatRequest) -> bool:
    return bool(request.relayed_from) and (
        NestMessage.objects.filter(msg_id=request.relayed_from).exclude(nest=request.nest).exists()
    )




def _active(name: str) -> Crow | None:
    """The crow if it may be invoked at all: active (not quarantined or retired), not silent."""
    crow = _crow(name)
    if crow is None or crow.status != Crow.Status.ACTIVE or crow.role in queries.SILENT_ROLES:
        return None
    return crow


def _next_lens(request: ChatRequest, message: NestMessage) -> Decision | None:
    taken = set(request.claims.values_list("crow", flat=True))
    if len(taken) >= CONSPIRACY_CAP:
        return None
    choice, scores = best_fit(
        request.nest, message, request.message.text, request.task_type,
        exclude=taken | {request.requester}, need_level=queries.REGULAR,
    )
    if not choice:
        return None
    return Decision(choice, "lens", "claim", scores[choice], scores)


def decide(
    message: NestMessage, *, claim: Claim | None, request: ChatRequest | None, poster: Crow | None = None
) -> Decision | None:
    """The one crow `message` invokes, or None. `claim` is the claim this message made
    (if it stood); `request` is the request this message is (if it is one) or answers;
    `poster` the posting crow's row as the post read it (not read again)."""
    nest = message.nest
    author = message.author
    kind = message.kind

    # A debate's moderator cues one speaker at a time; the owner's order starts one.
    cued = cued_crow(message)
    if cued and _active(cued):
        return Decision(cued, "debate", "say")
    if author == OWNER and is_stop_order(message.text) and running_debate(nest) is not None:
        # "Stop the debate (about pricing)": the moderator ends it, whoever the owner
        # addressed; before the order to start one, which "debate about" also reads as.
        boss = queries.boss()
        if boss is not None and _active(boss.name):
            return Decision(boss.name, "debate_stop", "say")
    if author == OWNER and nest.kind != Nest.Kind.DIRECT and is_debate_order(message.text):
        boss = queries.boss()
        if boss is not None and _active(boss.name):
            return Decision(boss.name, "debate", "say")
    if author in HARNESS_AUTHORS:
        if kind == MessageKind.NUDGE and message.to and _active(message.to):
            return Decision(message.to, "nudge", expect_for_nudge(message))
        return None
    # The owner's correction invokes the corrected crow alone; a second answer to it, or
    # another crow's, invokes no one (nests.actions.chat.corrections).
    corrected = corrected_crow(message)
    if corrected:
        return Decision(corrected, CORRECTION_REASON, "say") if _active(corrected) else None
    if answers_correction_again(message):
        return None
    if claim is not None:
        return Decision(claim.crow, "claim_deliver", "deliver")
    if kind == MessageKind.DELIVER and request is not None and author != OWNER:
        if request.mode == ChatRequest.Mode.CONSPIRACY:
            lens = _next_lens(request, message)
            if lens is not None:
                return lens
        quill = queries.quill()
        if quill is not None and _relayed_from_elsewhere(request):
            return Decision(quill.name, "relay_back", "say")
        return None
    if kind == MessageKind.DECLINE and request is not None and author != OWNER:
        if request.addressed or request.state != ChatRequest.State.OPEN:
            return None
        choice, scores = best_fit(
            nest, message, request.message.text, request.task_type,
            exclude=decliners(request) | {request.requester}, need_level=queries.REGULAR,
        )
        return Decision(choice, "redispatch", "claim", scores[choice], scores) if choice else None
    if kind not in (MessageKind.SAY, MessageKind.REQUEST) and author != OWNER:
        return None
    # The owner never claims or delivers; an owner message Jev tags as one of the crows'
    # kinds is talk as far as who answers is concerned.

    addressed = message.to if message.to and message.to != OWNER else ""
    if nest.kind == Nest.Kind.DIRECT:
        crow = queries.direct_chat_crow(nest.nest_id)
        if author == OWNER and crow is not None and _active(crow.name):
            return Decision(crow.name, "direct", "claim" if kind == MessageKind.REQUEST else "say")
        return None

    relayed_for_owner = (
        kind == MessageKind.REQUEST and request is not None and request.message_id == message.id
        and request.requester == OWNER and bool(request.relayed_from)
    )
    if author == OWNER or relayed_for_owner:
        # The owner, or Quill carrying the owner's words into this room.
        if addressed and addressed != author:
            if not _active(addressed):
                return None
            return Decision(addressed, "addressed", "claim" if kind == MessageKind.REQUEST else "say")
        if author == OWNER and (
            is_status_question(message.text) or _asks_for_a_relay(message) or parse_crow_need(message.text)
        ):
            # "What's happening?" is Quill's to answer from the rooms, whatever Jev tagged
            # it: routed as a request, a crow would take the question for work. So is
            # "ask the ops nest to …": a crow here would do, in this room, what the owner
            # wanted done in another (docs/CHATROOM.md, "Quill and Boss"). So is "I need a
            # crow for X": Quill asks Boss for it (docs/GOVERNANCE.md, 2).
            quill = queries.quill()
            if quill is not None:
                return Decision(quill.name, "quill_default", "say")
        if kind == MessageKind.REQUEST and request is not None:
            choice, scores = best_fit(
                nest, message, message.text, request.task_type,
                exclude={author}, need_level=queries.REGULAR,
            )
            if choice:
                return Decision(choice, "fit", "claim", scores[choice], scores)
            quill = queries.quill()
            if quill is not None and quill.name != author:
                return Decision(quill.name, "quill_route", "say")
            return None
        if author == OWNER and is_question(message.text):
            quill = queries.quill()
            return Decision(quill.name, "quill_default", "say") if quill else None
        return None

    # A crow speaking. Only a request can call another crow in, and only from a crow that
    # may open requests; crows' talk never invokes anyone, so chatter cannot loop.
    asker = poster if poster is not None and poster.name == author else _crow(author)
    if kind != MessageKind.REQUEST or request is None or asker is None or not rights.may_open_requests(asker, request.task_type):
        return None
    if message.to == OWNER:
        # A crow asking the owner for something: no crow is called in.
        return None
    if addressed:
        return Decision(addressed, "addressed", "claim") if addressed != author and _active(addressed) else None
    choice, scores = best_fit(
        nest, message, message.text, request.task_type, exclude={author}, need_level=queries.REGULAR
    )
    return Decision(choice, "fit", "claim", scores[choice], scores) if choice else None


def _asks_for_a_relay(message: NestMessage) -> bool:
    """The owner asks for work in another nest ("ask the ops nest to …", "relay to ops: …")."""
    relay = parse_relay(message.text)
    if relay is None:
        return False
    target = queries.find_nest(relay[0])
    if target is None or target.pk == message.nest_id:
        # No such nest ("tell the nest to wrap up" means this one): a message for this room.
        return False
    # "In the launch nest, Rook did great work" is a remark: without an asking verb
    # ("ask/tell/get/have the … nest", "relay to …"), only a request is carried over.
    return message.kind == MessageKind.REQUEST or any(p.search(message.text) for p in RELAY_VERB_RES)


def react(posted: Posted) -> Effects:
    """Dispatch as a reactor: an owner's message grants the room a turn; then the one crow
    the message calls for, if any, is asked for (the loop spends the exchange)."""
    message, room = posted.message, posted.room
    # Quill carrying the owner's words into another room speaks for the owner there, so
    # that room gets the owner's turn; routing inside one room does not, or one owner
    # message would buy two turns.
    owner_turn = (message.author == OWNER and not posted.harness) or (
        posted.on_behalf_of == OWNER
        and bool(posted.relayed_from)
        and not NestMessage.objects.filter(nest=room, msg_id=posted.relayed_from).exists()
    )
    waiting: list[Invocation] = []
    if owner_turn:
        posted.budget = budgets.grant_turn(room, room_locked=True)
        # Crows a spent turn did not invoke answer now, before anyone this message calls.
        waiting = list(budgets.waiting_for_a_turn(room))
    decision = decide(message, claim=posted.claim, request=posted.request, poster=posted.crow)
    if decision is None:
        return Effects(resume=waiting)
    task_type = posted.request.task_type if posted.request is not None else "chat"
    return Effects(resume=waiting, invoke=[Invoke(
        decision.crow, decision.reason, decision.expect, fit=decision.fit, candidates=decision.candidates,
        task_type=task_type,
    )])
