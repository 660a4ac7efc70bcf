"""Posting a member's message to a nest: the one path for the owner and crows (over the API
and from their brains alike). It is two steps, after Zulip's check_* / do_* split:

- `check_message` (outside any transaction), given the poster's `Draft`: validate the
  body (so an invalid post never counts against the poster's rate), admit a crow's post
  against its rate (strikes keyed crow:<name>, committed on their own), and tag its kind
  with Jev (docs/CHATROOM.md "Tagging"; Jev may load a model, which must not happen under
  a lock). It returns a `CheckedMessage`.
- `store_message` (one transaction, under the room's row lock): count the owner's post
  against the owner's rate (no strike, so it shares the post's commit), decide a claim
  (first claim wins), let the Sentry read a crow's claim or deliver, then `say` it (number,
  store, emit `nest.message`: nests.actions.chat.room), log the tags, and hand it to the
  chat core's loop (nests.actions.chat.react), whose reactors decide what it causes.

`post_message` is the two in a row. The harness never posts here: its notices, nudges,
flags and a moderator's cues are said by the loop, or by `say` itself.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import transaction

from flock import jev as jev_service
from flock.actions import log_jev_tags
from flock.brains.header import header_body, missing_reason, parse_ask_owner, parse_header
from flock.errors import BadInput, Conflict, NotFound
from flock.events import lock_event_log
from flock.jev.fit import warm_fit_score
from flock.jev.questions import DEFAULT_HIGH_THRESHOLD
from flock.models import Crow
from flock.vocab import CROW_KINDS, KINDS, OWNER, REPLY_KINDS, MessageKind
from nests import queries
from nests.actions.chat import claims as chat_claims
from nests.actions.chat import expectations, met, rights, sentry
from nests.actions.chat.effects import Posted
from nests.actions.chat.react import react
from nests.actions.chat.room import TEXT_MAX, lock_room_numbering, say
from nests.actions.rooms import ensure_direct_chat
from nests.models import ChatRequest, Nest, NestMessage
from trust.actions.strikes import admit_owner_post, admit_post, poster_key

if TYPE_CHECKING:
    from nests.models import Invocation

log = logging.getLogger("crows.chat")

MENTION = re.compile(r"(?<![\w@])@([A-Za-z][A-Za-z0-9_-]{0,39})")
# Pipeline modes map onto the chatroom's claim classes: a murder is a conspiracy.
MODE_CLASSES = {"solo": "solo", "split": "split", "murder": "conspiracy"}


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


# The owner is no crow (docs/CHATROOM.md, the kinds table): an owner's words are talk, a
# request or a pointer, never a claim, a delivery or a decline, whatever they look like
# ("Sort these numbers: 5, 3, 9, 1" reads like a delivery to Jev).
OWNER_KINDS: tuple[str, ...] = (MessageKind.SAY, MessageKind.REQUEST, MessageKind.REFER)


def _jev_choice(answer: Any, kinds: tuple[str, ...]) -> tuple[str, bool]:
    """Jev's choice among the kinds this poster may post, and whether Jev is sure of it:
    the likeliest kind it may post, sure when its share of those kinds' probability clears
    the high band. For a crow (every kind allowed) that is Jev's own answer and band. For
    the owner, probability Jev put on a crow's kind is no evidence between say, request
    and refer: "Fix this Python function: <code>" at request 0.49, deliver 0.45 is a
    request (0.94 of the owner's kinds), not `say` for want of a band."""
    if answer is None:
        return "", False
    if answer.choice in kinds and answer.band == "high":
        return answer.choice, True
    allowed = {kind: p for kind, p in answer.probs.items() if kind in kinds}
    total = sum(allowed.values())
    if total <= 0:
        return "", False
    choice = max(allowed, key=lambda kind: allowed[kind])
    return choice, allowed[choice] / total >= _kind_high_threshold()


def _kind_high_threshold() -> float:
    try:
        return float(jev_service.questions()["kind"].high_threshold)
    except Exception:
        return DEFAULT_HIGH_THRESHOLD


def tag_kind(text: str, header: str, *, kinds: tuple[str, ...] = CROW_KINDS) -> Tag:
    """docs/CHATROOM.md "Tagging": Jev above its high band stands (`jev`); Jev unsure, the poster's
    header (`header`); both present and disagreeing, Jev wins (`disagreement`); neither,
    `say` (`default`). `kinds` are those the poster may post (OWNER_KINDS for the owner)."""
    answer = _ask("kind", text)
    choice, sure = _jev_choice(answer, kinds)
    if sure:
        if header and header != choice:
            return Tag(choice, "disagreement", answer)
        return Tag(choice, "jev", answer)
    if header:
        return Tag(header, "header", answer)
    return Tag(MessageKind.SAY, "default", answer)


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
    for name, value in (("to", to), ("kind", kind), ("refers_to", refers_to)):
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{name} must be a string")


@dataclass(frozen=True)
class CheckedMessage:
    """A post that passed every check outside the lock, with its kind tagged."""

    nest: Nest
    author: str
    crow: Crow | None  # the posting crow; None for the owner
    body: str  # the text to store (without a bracket header)
    jev_text: str  # the text as written, as Jev read it
    header: str  # the poster's own word on the kind ("" if none)
    refers_to: str
    to: str  # the explicit addressee, or ""
    members: list[str]
    tag: Tag
    request_facts: tuple[str, str, list[Any]] | None
    invocation: Invocation | None
    on_behalf_of: str
    relayed_from: str
    finding: sentry.Finding | None
    # Jev's `expectation` answer for an owner's or crow's message (docs/GOVERNANCE.md).
    expectation_answer: Any = None
    # Jev's `expectation_met` answers for the room's open expectations (nests.actions.chat.met).
    met_answers: dict[int, Any] = field(default_factory=dict)


def _check_poster(nest: Nest, author: str, crow: Crow | None, header: str, members: list[str]) -> None:
    if author != OWNER and author not in members:
        raise BadInput(f"{author} is not a member of {nest.nest_id}; post through a member or through Quill")
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


@dataclass(frozen=True)
class Draft:
    """A post as its poster hands it in, before any check: what `post_message` is called
    with and `check_message` checks. `author`, `text`, `to`, `kind` and `refers_to` come
    from a client as they are (any JSON value), so they are checked, not trusted.

    `kind` is the poster's structured header (a crow's own word on what it is saying); a
    bracket header on the text's first line (`[CLAIM launch-1] ...`) serves the same way
    and is taken off the stored text. `invocation` marks a brain's reply: a refused claim
    then becomes a review `say` instead of a 409. `on_behalf_of`/`relayed_from` are for
    Quill carrying the owner's request: the request goes back to the owner, and the
    room's turn is granted as if the owner had spoken. `finding` is the Sentry's reading
    of a brain's reply before it was posted: the reply is stored verbatim as a `say` (the
    evidence) and flagged. `fixed_kind`: the poster's header is the kind, Jev is not asked
    (the harness's fixed answers on Boss's and Quill's behalf)."""

    nest_id: str
    _: KW_ONLY
    author: object
    text: object
    to: object = None
    kind: object = None
    refers_to: object = None
    invocation: Invocation | None = None
    on_behalf_of: str = ""
    relayed_from: str = ""
    finding: sentry.Finding | None = None
    fixed_kind: bool = False


def check_message(draft: Draft) -> CheckedMessage:
    """Every check a post must pass before it is stored, its rate admitted and its kind
    tagged; BadInput/NotFound/RateLimited otherwise."""
    nest_id, author, text, to, kind = draft.nest_id, draft.author, draft.text, draft.to, draft.kind
    refers_to, invocation, finding = draft.refers_to, draft.invocation, draft.finding
    _validate_shape(author, text, to, kind, refers_to)
    assert isinstance(author, str) and isinstance(text, str)
    author = author.strip()
    jev_text = text.strip()
    header = (kind or "").strip() if isinstance(kind, str) else ""
    refers = (refers_to or "").strip() if isinstance(refers_to, str) else ""
    # Jev reads the text as written; the stored body loses a bracket header, which lives
    # on as the kind and refers_to. A reply the Sentry is flagging is kept word for word.
    body = jev_text
    parsed = None if finding is not None else parse_header(jev_text)
    if invocation is None and author != OWNER:
        # The protocol has no [NUDGE …] or [FLAG …] for crows: over the API it is refused as
        # the kind is; a brain's reply opening so is a breach the Sentry flags instead. (The
        # owner's words are the owner's: such a text is stored as said.)
        forbidden = sentry.FORBIDDEN_HEADER_RE.match(jev_text.split("\n", 1)[0])
        if forbidden:
            raise BadInput(
                f"kind {forbidden.group(1).lower()!r} is posted by the harness only, never by a member "
                f"(the text opens with {forbidden.group(0).strip()[:60]})"
            )
    if parsed is not None:
        if invocation is None and missing_reason(jev_text, parsed):
            raise BadInput(f"[{parsed.verb} {parsed.refers_to}] needs a reason after the bracket, as the protocol has it")
        # A bare header ("[CLAIM launch-1]", as the protocol writes a claim) is a whole post.
        body = header_body(jev_text, parsed)
        header = header or parsed.kind
        refers = refers or parsed.refers_to
    if not 1 <= len(body) <= TEXT_MAX:
        raise BadInput(f"text must be 1–{TEXT_MAX} characters after trimming, got {len(body)}")
    addressee = (to or "").strip() if isinstance(to, str) else ""

    nest = open_room(nest_id)
    members = queries.crow_members(nest)
    crow = None if author == OWNER else Crow.objects.filter(name=author).first()
    _check_poster(nest, author, crow, header, members)
    if addressee and addressee != OWNER and addressee not in members:
        raise BadInput(f"to must be the owner or a member of {nest.nest_id}, not {addressee!r}")
    # Messages are never edited or deleted, so this check outside the lock stays true.
    if refers and not NestMessage.objects.filter(nest=nest, msg_id=refers).exists():
        raise BadInput(f"refers_to {refers!r} is not a message of {nest.nest_id}")

    if finding is not None:
        # The breaching reply is evidence: it skips Jev and the rate, and is a plain say.
        tag = Tag(MessageKind.SAY, "header", None)
    else:
        # The owner's post is counted in the transaction that stores it (store_message):
        # the owner earns no strike, so its refusal and the post may share a rollback.
        if author != OWNER:
            admit_post(poster_key(crow=author), kind="nest")
        if draft.fixed_kind:
            # The harness worded it for a crow (Boss's and Quill's fixed answers): the header
            # says what it is, and Jev's reading of the words ("Can't do that: …") does not.
            tag = Tag(header or MessageKind.SAY, "header", None)
        elif author != OWNER and parse_ask_owner(jev_text) is not None:
            # A crow's [ASK_OWNER …] is a decision it needs from the owner, not work: no
            # message kind (ask_owner is a decision, docs/GOVERNANCE.md), so it is a say,
            # never a delivery or a request however Jev reads its options.
            tag = Tag(MessageKind.SAY, "header", None)
        else:
            tag = tag_kind(jev_text, header, kinds=OWNER_KINDS if author == OWNER else CROW_KINDS)
    request_facts = _request_facts(body) if tag.kind == MessageKind.REQUEST else None
    if tag.kind in (MessageKind.REQUEST, *REPLY_KINDS):
        _warm_fit()
    # Jev's `expectation` question reads owner and crow messages, outside the transaction.
    expectation_answer = expectations.read_expectation(jev_text) if finding is None else None
    met_answers = met.read_met(nest, author=author, text=body) if finding is None else {}
    return CheckedMessage(
        nest=nest, author=author, crow=crow, body=body, jev_text=jev_text, header=header,
        refers_to=refers, to=addressee, members=members, tag=tag, request_facts=request_facts,
        invocation=invocation, on_behalf_of=draft.on_behalf_of, relayed_from=draft.relayed_from,
        finding=finding, expectation_answer=expectation_answer, met_answers=met_answers,
    )


def store_message(post: CheckedMessage) -> NestMessage:
    """Store a checked post under its room's lock and emit `nest.message`; everything it
    causes (a claim, a flag, a decision answered, a crow invoked) commits with it."""
    with transaction.atomic():
        lock_event_log()
        room, number = lock_room_numbering(post.nest.pk)
        if post.author == OWNER and post.finding is None:
            admit_owner_post("nest")
        kind = post.tag.kind
        target = chat_claims.request_for(room, post.refers_to) if kind in REPLY_KINDS else None
        claiming = kind == MessageKind.CLAIM and target is not None and post.crow is not None
        if claiming and target is not None:
            refusal = chat_claims.claim_refusal(target, crow=post.author)
            if refusal:
                if post.invocation is None:
                    raise Conflict(refusal)
                # A brain's late claim stays in the room as a review comment (docs/CHATROOM.md).
                kind, claiming = MessageKind.SAY, False
        finding = post.finding
        if finding is None:
            # The Sentry judges what the crow meant to do: its own header counts as much as
            # Jev's tag (a [RESULT x] that Jev reads as talk is still a delivery attempt).
            judged = target or (
                chat_claims.request_for(room, post.refers_to) if post.header in REPLY_KINDS else None
            )
            finding = sentry.check_post(
                author=post.author, crow=post.crow, kind=kind, header=post.header, target=judged,
                invocation=post.invocation, text=post.body,
            )
        # Speaking rights (nests/actions/chat/rights.py): a post that would do more than the
        # crow's trust allows is kept as talk, and the harness says which rule.
        rule, meant = "", kind
        if finding is None and post.crow is not None and kind in (MessageKind.REQUEST, MessageKind.CLAIM, MessageKind.DELIVER):
            task_type = post.request_facts[1] if post.request_facts is not None else "chat"
            rule = rights.refusal(post.crow, kind=kind, target=target, task_type=task_type, invocation=post.invocation)
            if rule:
                kind, claiming, target = MessageKind.SAY, False, None
        addressee = post.to
        if not addressee:
            if kind in REPLY_KINDS and target is not None and target.requester != post.author:
                addressee = target.requester
            else:
                addressee = first_mention(post.body, post.members)

        routed = _still_to_route(room, post)

        message = say(
            room, author=post.author, text=post.body, kind=kind, to=addressee, refers_to=post.refers_to,
            tagged_by=post.tag.tagged_by, room_locked=True, number=number,
        )
        if routed is not None:
            # Under the same lock as every claim: from now on a claim on the original is
            # told where it went.
            chat_claims.mark_relayed(routed, to_msg_id=message.msg_id)
        # Every Jev answer is logged with its probabilities (docs/JEV.md), the kind's and
        # the expectation's (which the ledger reads below, in expectations.on_message), in
        # one INSERT.
        answers, outcomes = [], []
        if post.tag.answer is not None:
            answers.append(post.tag.answer)
            outcomes.append({"kind": kind, "tagged_by": post.tag.tagged_by, "header": post.header})
        if post.expectation_answer is not None:
            answers.append(post.expectation_answer)
            outcomes.append({"kind": kind})
        if answers:
            log_jev_tags(answers, subject=message.msg_id, text=post.jev_text, outcomes=outcomes)
        if post.invocation is not None:
            # The reply and its invocation commit together, so a re-run after a crash sees
            # the reply already posted and does not post a second one.
            type(post.invocation).objects.filter(pk=post.invocation.pk).update(reply=message)
        react(Posted(
            room=room, message=message, crow=post.crow, invocation=post.invocation, on_behalf_of=post.on_behalf_of,
            relayed_from=post.relayed_from, finding=finding, target=target, claiming=claiming,
            request_facts=post.request_facts if not rule else None, expectation_answer=post.expectation_answer,
            met_answers=post.met_answers,
            rights_note=rights.note(post.author, meant, message.msg_id, rule) if rule else "",
        ))
    return message


def _still_to_route(room: Nest, post: CheckedMessage) -> ChatRequest | None:
    """The owner's request in this room that `post` routes to a crow by name (Quill, when
    nobody in the room could claim it), or None for any other post. A crow that claimed
    it meanwhile (or an answer that closed it) has taken it, and a routed copy would have
    two crows doing one job: checked under the room's lock, which every claim takes too,
    so Conflict, and nothing is posted."""
    if not post.relayed_from or post.on_behalf_of != OWNER:
        return None
    routed = ChatRequest.objects.filter(nest=room, message__msg_id=post.relayed_from).first()
    if routed is not None and (refusal := chat_claims.route_refusal(routed)):
        raise Conflict(refusal)
    return routed


def _called_with[**P, R](make: Callable[P, Draft]) -> Callable[[Callable[[Draft], R]], Callable[P, R]]:
    """Give a function of one Draft the Draft's own fields as its parameters: callers keep
    writing `post_message("launch", author=..., text=...)`, and the fields are written
    once, in Draft (mypy checks each call against them)."""

    def wrap(func: Callable[[Draft], R]) -> Callable[P, R]:
        @functools.wraps(func)
        def called(*args: P.args, **kwargs: P.kwargs) -> R:
            return func(make(*args, **kwargs))

        return called

    return wrap


@_called_with(Draft)
def post_message(draft: Draft) -> NestMessage:
    """Validate, rate-limit, tag and store one member's message numbered `<nest_id>-<n>`,
    emit `nest.message`, and run the chat core's reactors on it (dispatch may invoke the one
    crow it calls for). Called with the Draft's fields (see Draft for each)."""
    return store_message(check_message(draft))
