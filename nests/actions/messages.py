"""Posting a message to a nest: the one path for the owner, crows (the API and their
brains alike) and the harness.

In order: validate (so an invalid body never counts against the poster's rate), admit the
post against the poster's rate (strikes keyed owner vs crow:<name>), tag its kind with Jev
(EVENTS.md "Tagging"; outside the transaction, since Jev may load a model), then, under the
nest's row lock: decide a claim (first claim wins), number and store the message, emit
`nest.message`, log the tags, record the request/claim/deliver bookkeeping and hand the
message to dispatch, which may invoke one crow.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction

from flock import jev as jev_service
from flock.actions import log_jev_tag
from flock.brains.header import parse_header, strip_header
from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit, lock_event_log, register_event_names
from flock.jev.fit import warm_fit_score
from flock.models import Crow
from nests import queries
from nests.actions.chat import claims as chat_claims
from nests.actions.chat import debates, deliveries, expectations, orchestration, sentry
from nests.actions.chat.dispatch import route_message
from nests.actions.rooms import ensure_direct_chat
from nests.models import ChatRequest, Nest, NestMessage
from trust.actions import answer_decision
from trust.actions.strikes import admit_post, poster_key
from trust.queries import open_decision_by_phrase

if TYPE_CHECKING:
    from nests.models import Invocation

register_event_names("nest.message")

log = logging.getLogger("crows.chat")

TEXT_MAX = 2000
KINDS = ("say", "request", "claim", "deliver", "refer", "decline", "nudge", "flag")
CROW_KINDS = ("say", "request", "claim", "deliver", "refer", "decline")
OWNER = "owner"
MENTION = re.compile(r"(?<![\w@])@([A-Za-z][A-Za-z0-9_-]{0,39})")
# Pipeline modes map onto the chatroom's claim classes: a murder is a conspiracy.
MODE_CLASSES = {"solo": "solo", "split": "split", "murder": "conspiracy"}
REPLY_KINDS = ("claim", "deliver", "decline")


def first_mention(text: str, members: list[str]) -> str:
    """The first @Name in the text that names a member (or the owner), as the member spells it."""
    by_lower = {m.lower(): m for m in [*members, OWNER]}
    for match in MENTION.finditer(text):
        name = by_lower.get(match.group(1).lower())
        if name:
            return name
    return ""


def open_room(nest_id: str) -> Nest:
    """The room with this id; a direct chat is created on first use. NotFound otherwise."""
    nest = Nest.objects.filter(nest_id=nest_id).first()
    if nest is None:
        crow = queries.direct_chat_crow(nest_id)
        if crow is None:
            raise NotFound(f"no such nest: {nest_id!r}")
        nest = ensure_direct_chat(crow.name)
    return nest


@dataclass(frozen=True)
class Tag:
    kind: str
    tagged_by: str
    answer: Any  # the JevAnswer, or None when Jev could not answer


def _ask(question: str, text: str) -> Any:
    try:
        return jev_service.ask(question, text)
    except Exception:
        # A classifier that cannot answer must not stop the room: the header or `say` is used.
        log.warning("Jev could not answer %r; falling back", question, exc_info=True)
        return None


def tag_kind(text: str, header: str) -> Tag:
    """EVENTS.md "Tagging": Jev above its high band stands (`jev`); Jev unsure, the poster's
    header (`header`); both present and disagreeing, Jev wins (`disagreement`); neither,
    `say` (`default`)."""
    answer = _ask("kind", text)
    sure = answer is not None and answer.band == "high" and answer.choice in CROW_KINDS
    if sure:
        if header and header != answer.choice:
            return Tag(answer.choice, "disagreement", answer)
        return Tag(answer.choice, "jev", answer)
    if header:
        return Tag(header, "header", answer)
    return Tag("say", "default", answer)


def _request_facts(text: str) -> tuple[str, str, list[Any]]:
    """(claim class, task type, Jev answers to log) for a new request."""
    mode_answer = _ask("mode", text)
    type_answer = _ask("task_type", text)
    mode = "solo"
    if mode_answer is not None:
        # A conspiracy invokes several crows, so it takes Jev being sure; solo and split
        # behave alike in a room (first claim wins), so any answer will do for them.
        if mode_answer.choice == "murder" and mode_answer.band == "high":
            mode = "conspiracy"
        elif mode_answer.choice in ("solo", "split"):
            mode = mode_answer.choice
    task_type = type_answer.choice if type_answer is not None else "chat"
    return mode, task_type, [a for a in (mode_answer, type_answer) if a is not None]


def _warm_fit() -> None:
    # Dispatch may score crow fit under the nest lock; the first score in a process fits
    # Jev's vectorizer (seconds), which should not happen while holding the write lock.
    try:
        warm_fit_score()
    except Exception:
        log.warning("Jev's fit score could not warm up", exc_info=True)


def _validate_shape(author: object, text: object, to: object, kind: object, refers_to: object) -> None:
    if not isinstance(author, str) or not author.strip():
        raise BadInput("author is required and must be a string")
    if not isinstance(text, str):
        raise BadInput("text is required and must be a string")
    for field, value in (("to", to), ("kind", kind), ("refers_to", refers_to)):
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{field} must be a string")


def post_message(
    nest_id: str,
    *,
    author: object,
    text: object,
    to: object = None,
    kind: object = None,
    refers_to: object = None,
    tagged_by: str | None = None,
    invocation: Invocation | None = None,
    on_behalf_of: str = "",
    relayed_from: str = "",
    finding: sentry.Finding | None = None,
) -> NestMessage:
    """Validate, rate-limit, tag and store one message numbered `<nest_id>-<n>`, emit
    `nest.message`, and let dispatch invoke the one crow it calls for (if any).

    `kind` is the poster's structured header (a crow's own word on what it is saying); a
    bracket header on the text's first line (`[CLAIM launch-1] ...`) serves the same way
    and is taken off the stored text. `tagged_by` is set only by the harness for its own
    messages (nudges, budget notices), which skip Jev and the rate limit.
    `invocation` marks a brain's reply: a refused claim then becomes a review `say`
    instead of a 409. `on_behalf_of`/`relayed_from` are for Quill carrying the owner's
    request: the request goes back to the owner, and the room's turn is granted as if
    the owner had spoken. `finding` is the Sentry's reading of a brain's reply before it
    was posted: the reply is stored verbatim as a `say` (the evidence) and flagged."""
    _validate_shape(author, text, to, kind, refers_to)
    assert isinstance(author, str) and isinstance(text, str)
    author = author.strip()
    harness = tagged_by is not None
    jev_text = text.strip()
    header = (kind or "").strip() if isinstance(kind, str) else ""
    refers = (refers_to or "").strip() if isinstance(refers_to, str) else ""
    # Jev reads the text as written; the stored body loses a bracket header, which lives
    # on as the kind and refers_to.
    body = jev_text
    parsed = None if harness or finding is not None else parse_header(jev_text)
    if parsed is not None:
        body = strip_header(jev_text).strip()
        header = header or parsed.kind
        refers = refers or parsed.refers_to
    if not 1 <= len(body) <= TEXT_MAX:
        raise BadInput(f"text must be 1–{TEXT_MAX} characters after trimming, got {len(body)}")
    addressee = (to or "").strip() if isinstance(to, str) else ""

    nest = open_room(nest_id)
    members = queries.crow_members(nest)
    crow = None if author == OWNER or harness else Crow.objects.filter(name=author).first()
    if not harness:
        if author != OWNER and author not in members:
            raise BadInput(
                f"{author} is not a member of {nest.nest_id}; post through a member or through Quill"
            )
        if crow is not None and crow.role == Crow.Role.SENTRY:
            raise BadInput(f"{author} speaks only in flags, posted by the harness")
        if crow is not None and crow.status == Crow.Status.QUARANTINED:
            raise BadInput(f"{author} is quarantined and may not speak until the owner reinstates it")
        if header and header not in CROW_KINDS:
            raise BadInput(
                f"kind must be one of {', '.join(CROW_KINDS)}; {header!r} is not postable"
                if header not in KINDS
                else f"kind {header!r} is posted by the harness only, never by a member"
            )
    if addressee and addressee != OWNER and addressee not in members:
        raise BadInput(f"to must be the owner or a member of {nest.nest_id}, not {addressee!r}")
    # Messages are never edited or deleted, so this check outside the lock stays true.
    if refers and not NestMessage.objects.filter(nest=nest, msg_id=refers).exists():
        raise BadInput(f"refers_to {refers!r} is not a message of {nest.nest_id}")

    if finding is not None:
        # The breaching reply is kept word for word as evidence; it skips Jev and the rate.
        tag = Tag("say", "header", None)
    elif not harness:
        admit_post(poster_key(owner=True) if author == OWNER else poster_key(crow=author), kind="nest")
        tag = tag_kind(jev_text, header)
    else:
        tag = Tag(header or "say", tagged_by or "header", None)
    request_facts = _request_facts(body) if tag.kind == "request" else None
    # Jev's `expectation` question reads owner and crow messages, outside the transaction.
    expectation_answer = expectations.read_expectation(jev_text) if not harness and finding is None else None
    if tag.kind in ("request", *REPLY_KINDS):
        _warm_fit()

    with transaction.atomic():

        lock_event_log()
        room = Nest.objects.select_for_update().get(pk=nest.pk)
        final_kind = tag.kind
        target = chat_claims.request_for(room, refers) if final_kind in REPLY_KINDS else None
        claiming = final_kind == "claim" and target is not None and crow is not None
        if claiming and target is not None:
            refusal = chat_claims.claim_refusal(target, crow=author)
            if refusal:
                if invocation is None:
                    raise Conflict(refusal)
                # A brain's late claim stays in the room as a review comment (DECISIONS.md).
                final_kind, claiming = "say", False
        if finding is None and not harness:
            finding = sentry.check_post(
                author=author, crow=crow, kind=final_kind, target=target, invocation=invocation
            )
        if not addressee:
            if final_kind in REPLY_KINDS and target is not None and target.requester != author:
                addressee = target.requester
            else:
                addressee = first_mention(body, members)

        n = room.next_msg_n
        room.next_msg_n = n + 1
        room.save(update_fields=["next_msg_n"])
        message = NestMessage.objects.create(
            nest=room,
            n=n,
            msg_id=f"{room.nest_id}-{n}",
            kind=final_kind,
            author=author,
            text=body,
            to=addressee,
            refers_to=refers,
            tagged_by=tag.tagged_by,
        )
        emit("nest.message", message.record(), nest_id=room.nest_id)
        if tag.answer is not None:
            log_jev_tag(
                tag.answer,
                subject=message.msg_id,
                text=jev_text,
                outcome={"kind": final_kind, "tagged_by": tag.tagged_by, "header": header},
            )
        if finding is not None and crow is not None:
            # A breach: the crow is quarantined, flagged and put to the owner in this
            # transaction; its message changes nothing else and calls no one.
            if invocation is not None:
                type(invocation).objects.filter(pk=invocation.pk).update(reply=message)
            sentry.flag_breach(crow, nest=room, finding=finding, offending=message.msg_id)
            return message
        if author == OWNER:
            decision = open_decision_by_phrase(room.nest_id, body)
            if decision is not None:
                # The owner said the exact phrase in the room: that answers the decision.
                answer_decision(decision, answer=body, by=OWNER)
                return message

        request: ChatRequest | None = None
        claim = None
        if final_kind == "request" and request_facts is not None:
            mode, task_type, answers = request_facts
            for answer in answers:
                log_jev_tag(answer, subject=message.msg_id, text=body, outcome={"mode": mode, "task_type": task_type})
            request = chat_claims.record_request(
                message, mode=mode, task_type=task_type, requester=on_behalf_of, relayed_from=relayed_from
            )
        elif target is not None:
            request = target
            if claiming:
                lens = crow.strength if crow is not None and target.mode == ChatRequest.Mode.CONSPIRACY else ""
                claim = chat_claims.claim_request(target, crow=author, message=message, lens=lens)
            elif final_kind == "deliver" and crow is not None:
                chat_claims.record_deliver(target, crow=author, message=message)
                deliveries.review_delivery(message, request=target, crow=crow)
            elif final_kind == "decline" and crow is not None:
                chat_claims.record_decline(target, crow=author)

        # Quill carrying the owner's words into another room speaks for the owner there,
        # so that room gets the owner's turn; routing inside one room does not, or one
        # owner message would buy two turns.
        owner_turn = author == OWNER or (
            on_behalf_of == OWNER
            and bool(relayed_from)
            and not NestMessage.objects.filter(nest=room, msg_id=relayed_from).exists()
        )
        if invocation is not None:
            # The reply and its invocation commit together, so a re-run after a crash sees
            # the reply already posted and does not post a second one.
            type(invocation).objects.filter(pk=invocation.pk).update(reply=message)
        invoked = route_message(message, claim=claim, request=request, parent=invocation, owner_turn=owner_turn)
        expectations.on_message(
            message, request=request, claim=claim, invocation=invoked, answer=expectation_answer
        )
        debates.after_post(message, invocation=invocation)
        orchestration.after_post(message, request=request if request is not None and request.message_id == message.id else None)
        notice = sentry.quarantine_notice(message)
        if notice:
            # A quarantined crow never answers; the one who addressed it hears why.
            post_message(
                room.nest_id, author="harness", text=notice, kind="say",
                to=author, refers_to=message.msg_id, tagged_by="header",
            )
    return message
