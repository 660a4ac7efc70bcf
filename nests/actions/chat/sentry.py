"""The Sentry: the chatroom's watchdog (docs/GOVERNANCE.md).

It watches what crows post in rooms, never what the owner posts, for a crow acting
outside its contract. Each breach is a harness guardrail hit (score 1.0) or a Jev score
beyond its band, and is logged with that score and the evidence. On a crow's first breach
on a subject (a request, an expectation, or the offending message itself) the Sentry,
in the transaction that stored the offending message:

1. quarantines the crow (`trust.actions.quarantine_crow`, event `crow.quarantined`);
2. posts a `flag` in the room, author `Sentry`, to the owner, naming the breach and the
   evidence, `refers_to` the offending message (event `nest.message`);
3. opens an owner decision to reinstate or retire the crow (event `decision.opened`).

A later breach by the same crow on the same subject is logged but not flagged again. The
Sentry never hard-kills: only the owner's answer reinstates or retires.

Two kinds of check:

- `check_reply` reads a brain's reply before it is posted: a forbidden kind (`[NUDGE …]`,
  `[FLAG …]`), a room it is not a member of (`#room`), a fabricated source (a header or a
  citation naming a message that does not exist, an @crow that does not exist), a reply
  over CROWS_REPLY_TOKEN_CAP tokens. The reply is then posted verbatim as a `say` (the
  evidence) and flagged.
- `check_post` runs under the room's lock once a crow's message is tagged (brain replies
  and API posts alike): a redo (delivering on a solo/split request another crow holds the
  claim for), an ignored decline (claiming or delivering on a request it declined), a
  fabricated source (a delivery on a research or retrieval request that cites nothing,
  or cites links or documents found nowhere in the request, the room or the crow's
  memory: nests.actions.chat.sources), and, for a brain's claim the harness did not ask
  for, an off-task claim (Jev's fit below its low band).

`on_repeated_miss` is the hook the expectation ledger calls when a crow keeps missing one
expectation after nudges.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import transaction

from flock.actions import KEPT_ROLES, lock_for_grounding
from flock.brains.header import parse_header
from flock.events import lock_event_log
from flock.models import Crow, JevTag
from flock.vocab import HARNESS, HARNESS_AUTHORS, HARNESS_KINDS, OWNER, SENTRY, MessageKind
from nests import crow_fit, queries
from nests.actions.chat import sources
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.actions.chat.rights import has_role_rights, picked_for
from nests.actions.chat.status_question import is_question
from nests.models import ChatRequest, Invocation, Nest, NestMessage
from nests.queries_ledger import answered
from trust.actions import open_decision, quarantine_crow, record_breach, reinstate_phrase
from trust.models import Breach, Decision
from trust.queries import open_decision_for_crow

log = logging.getLogger("crows.sentry")

GUARDRAIL_SCORE = 1.0
# Jev's fit score (flock/jev/fit.py) is a similarity: unrelated texts land near 0 and a
# good match rarely passes 0.3. Below this a claim is off-task: the crow's profile and the
# request share next to no words or word-parts.
OFF_TASK_FIT_BELOW = 0.02
# Names an @mention may use that are not crows.
NOT_CROWS = frozenset({"owner", "harness", "sentry", "all", "everyone", "here", "flock"})
FORBIDDEN_HEADER_RE = re.compile(r"^\s*\[(NUDGE|FLAG)\b[^\]]*\]", re.IGNORECASE)
CITED_ID_RE = re.compile(r"(?<![\w-])([a-z0-9][a-z0-9-]*)-(\d{1,9})(?![\w-])")
MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z][A-Za-z0-9_-]{0,39})")
ROOM_RE = re.compile(r"(?<![\w#&])#([a-z0-9][a-z0-9-]{0,63})(?![\w-])")
BREACH_WORDS: dict[str, str] = {
    Breach.Kind.REDO: "redo",
    Breach.Kind.IGNORED_DECLINE: "ignored decline",
    Breach.Kind.FORBIDDEN_KIND: "forbidden kind",
    Breach.Kind.FABRICATED_SOURCE: "fabricated source",
    Breach.Kind.BUDGET_BLOWOUT: "budget blowout",
    Breach.Kind.OFF_TASK_CLAIM: "off-task claim",
    Breach.Kind.REPEATED_MISSES: "repeated nudged misses",
}


@dataclass(frozen=True)
class Finding:
    """One breach the Sentry saw: its kind, Jev's score (1.0 for a guardrail hit), the
    evidence in words, and the subject it is about (a request or expectation id; "" for
    the offending message itself)."""

    kind: str
    score: float
    evidence: str
    subject: str = ""


# --- reading a brain's reply before it is posted -----------------------------------------


def _room_exists(nest_id: str) -> bool:
    return Nest.objects.filter(nest_id=nest_id).exists() or queries.direct_chat_crow(nest_id) is not None


def _cited_message_missing(nest: Nest, text: str, *, known: str = "") -> str:
    """The first msg_id the text cites that does not exist, among ids of existing rooms.
    `known`: an id the caller has found already."""
    for m in CITED_ID_RE.finditer(text):
        room_id, msg_id = m.group(1), m.group(0)
        if msg_id == known:
            continue
        if room_id != nest.nest_id and not Nest.objects.filter(nest_id=room_id).exists():
            continue
        if not NestMessage.objects.filter(msg_id=msg_id).exists():
            return msg_id
    return ""


def _cited_crow_missing(text: str) -> str:
    for m in MENTION_RE.finditer(text):
        name = m.group(1)
        if name.lower() in NOT_CROWS:
            continue
        if not Crow.objects.filter(name__iexact=name).exists():
            return name
    return ""


def check_reply(inv: Invocation, crow: Crow, raw: str, *, tokens_out: int) -> Finding | None:
    """A breach in a brain's reply text, before it is posted, or None. Its subject is the
    message the crow was answering (the request, when there is one): a crow that breaks
    the contract again on the same work, say when nudged for it, is flagged once."""
    finding = _reply_breach(inv, crow, raw, tokens_out=tokens_out)
    if finding is None:
        return None
    return replace(finding, subject=answered(inv)[0].msg_id)


def _reply_breach(inv: Invocation, crow: Crow, raw: str, *, tokens_out: int) -> Finding | None:
    nest = inv.nest
    first_line = raw.split("\n", 1)[0]
    forbidden = FORBIDDEN_HEADER_RE.match(first_line)
    if forbidden:
        verb = forbidden.group(1).upper()
        kind = "nudge" if verb == "NUDGE" else "flag"
        who = "the harness" if kind == MessageKind.NUDGE else "the Sentry"
        return Finding(
            Breach.Kind.FORBIDDEN_KIND, GUARDRAIL_SCORE,
            f"{crow.name}'s reply opens with a {forbidden.group(0).strip()} header: a {kind}, which only {who} posts.",
        )
    for m in ROOM_RE.finditer(raw):
        room_id = m.group(1)
        if room_id == nest.nest_id or not _room_exists(room_id):
            continue
        other = Nest.objects.filter(nest_id=room_id).first()
        room_members = queries.crow_members(other) if other is not None else []
        if other is None:
            dm_crow = queries.direct_chat_crow(room_id)
            room_members = [dm_crow.name] if dm_crow is not None else []
        if crow.name not in room_members and crow.role not in queries.EVERYWHERE_ROLES:
            return Finding(
                Breach.Kind.FORBIDDEN_KIND, GUARDRAIL_SCORE,
                f"{crow.name} addressed #{room_id}, a room it is not a member of (it spoke in {nest.nest_id}).",
            )
    header = parse_header(raw)
    if header is not None and header.refers_to:
        if not NestMessage.objects.filter(nest=nest, msg_id=header.refers_to).exists():
            return Finding(
                Breach.Kind.FABRICATED_SOURCE, GUARDRAIL_SCORE,
                f"{crow.name}'s [{header.verb} {header.refers_to}] names {header.refers_to}, "
                f"which does not exist in {nest.nest_id}.",
            )
    # The header's message was just found in this room: not looked for again.
    missing = _cited_message_missing(nest, raw, known=header.refers_to if header is not None else "")
    if missing:
        return Finding(
            Breach.Kind.FABRICATED_SOURCE, GUARDRAIL_SCORE,
            f"{crow.name} cited {missing}, a message that does not exist.",
        )
    ghost = _cited_crow_missing(raw)
    if ghost:
        return Finding(
            Breach.Kind.FABRICATED_SOURCE, GUARDRAIL_SCORE,
            f"{crow.name} cited @{ghost}, a crow that does not exist.",
        )
    cap = settings.CROWS_REPLY_TOKEN_CAP
    if tokens_out > cap:
        return Finding(
            Breach.Kind.BUDGET_BLOWOUT, GUARDRAIL_SCORE,
            f"{crow.name}'s reply took {tokens_out:,} tokens, over the cap of {cap:,} per reply.",
        )
    return None


# --- reading a crow's post under the room's lock -----------------------------------------


def _fit(request: ChatRequest, crow: Crow) -> float:
    # A score Jev could not give judges nothing: 1 is never off-task.
    return crow_fit.typed_fit(request.message.text, crow, request.task_type, on_failure=1.0)


def _declined(target: ChatRequest, author: str) -> str:
    """The msg_id of `author`'s decline of `target`, or "": a message tagged decline, or
    one whose own header was a decline (Jev may have read it as something else)."""
    mine = NestMessage.objects.filter(nest=target.nest, refers_to=target.message.msg_id, author=author)
    tagged = mine.filter(kind=MessageKind.DECLINE).values_list("msg_id", flat=True).first()
    if tagged:
        return tagged
    ids = list(mine.values_list("msg_id", flat=True))
    meant = (
        JevTag.objects.filter(question="kind", subject__in=ids, outcome__header="decline")
        .values_list("subject", flat=True)
        .first()
    )
    return meant or ""


def check_post(
    *,
    author: str,
    crow: Crow | None,
    kind: str,
    target: ChatRequest | None,
    invocation: Invocation | None,
    header: str = "",
    text: str = "",
) -> Finding | None:
    """A breach in a crow's claim or deliver on `target`, or None. `kind` is the stored
    kind and `header` the crow's own word on it: either saying claim or deliver counts.
    `text` is the post's text as it will be stored (what a delivery cites).
    Owner and harness messages are never read (the Sentry cannot see the owner's)."""
    if crow is None or target is None or author in (OWNER, HARNESS, SENTRY):
        return None
    # Jev's reading of the text does not excuse what the crow said it was doing; the
    # evidence names the header then, since the stored kind reads otherwise.
    said = ""
    if kind not in (MessageKind.CLAIM, MessageKind.DELIVER):
        if header not in (MessageKind.CLAIM, MessageKind.DELIVER):
            return None
        said = f" (by its own header, {header}; Jev read the message as {kind})"
        kind = header
    msg_id = target.message.msg_id
    declined = _declined(target, author)
    if declined:
        verb = "claimed" if kind == MessageKind.CLAIM else "delivered on"
        return Finding(
            Breach.Kind.IGNORED_DECLINE, GUARDRAIL_SCORE,
            f"{author} declined {msg_id} ({declined}) and then {verb} it{said}.", subject=msg_id,
        )
    if kind == MessageKind.DELIVER and target.mode != ChatRequest.Mode.CONSPIRACY:
        holder = target.claims.exclude(crow=author).select_related("message").first()
        if holder is not None and not target.claims.filter(crow=author).exists():
            return Finding(
                Breach.Kind.REDO, GUARDRAIL_SCORE,
                f"{author} delivered on {msg_id}{said}, which {holder.crow} holds the claim for "
                f"({holder.message.msg_id}): others may review, not redo.",
                subject=msg_id,
            )
    if kind == MessageKind.DELIVER:
        fabricated = _fabricated_source(crow, target, text, said=said)
        if fabricated is not None:
            return fabricated
    if kind == MessageKind.CLAIM and invocation is not None and not picked_for(invocation, target):
        fit = _fit(target, crow)
        if fit < OFF_TASK_FIT_BELOW:
            return Finding(
                Breach.Kind.OFF_TASK_CLAIM, round(fit, 4),
                f"{author} claimed {msg_id}{said} ({target.task_type}) unasked, with a fit of {fit:.3f}, "
                f"below the low band {OFF_TASK_FIT_BELOW}.",
                subject=msg_id,
            )
    return None


def _fabricated_source(crow: Crow, target: ChatRequest, text: str, *, said: str = "") -> Finding | None:
    """docs/GOVERNANCE.md, "7. Fabrication": the example of a flag ("claimed a retrieval job and wrote
    fiction"): a delivery on a research or retrieval request that cites no source, or cites
    links or documents that appear nowhere the crow could have read them. One that says
    plainly it has no source claims none and is not read so. Quill's and
    Boss's deliveries carry other crows' work back or report an order, and are not read."""
    if has_role_rights(crow) or not sources.is_research(target):
        return None
    msg_id = target.message.msg_id
    citations = sources.cited(text, besides=(msg_id,))
    if not citations and not sources.says_unsourced(text):
        return Finding(
            Breach.Kind.FABRICATED_SOURCE, GUARDRAIL_SCORE,
            f"{crow.name} delivered on {msg_id}{said}, a research request (“{_gist(target.message.text)}”), "
            f"citing nothing: no link, document or message id.",
            subject=msg_id,
        )
    missing = sources.unfound(citations, room=target.nest, crow=crow.name, request=target)
    if missing:
        return Finding(
            Breach.Kind.FABRICATED_SOURCE, GUARDRAIL_SCORE,
            f"{crow.name} delivered on {msg_id}{said} citing {', '.join(missing)}, found nowhere in "
            f"{sources.FOUND_IN}.",
            subject=msg_id,
        )
    return None


def _gist(text: str, words: int = 10) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


# --- acting on a breach ------------------------------------------------------------------


def _flag_text(crow: Crow, finding: Finding, phrase: str, decision_hint: str) -> str:
    words = BREACH_WORDS.get(finding.kind, finding.kind)
    # Quill, Boss and the other kept roles cannot be retired: the flag offers only what works.
    # A reply of "retire" in a room is talk (only the phrase answers there): retiring is the
    # card's button, the API or the admin.
    retire = "" if crow.role in KEPT_ROLES else ", or press Retire on its decision card to retire it"
    return (
        f"@owner Breach by {crow.name}: {words} (score {finding.score:.2f}). {finding.evidence} "
        f"{crow.name} is quarantined pending your call{decision_hint}: reply “{phrase}” to reinstate it"
        f"{retire}. Anything else keeps the quarantine."
    )


def flag(crow: Crow, *, nest: Nest, finding: Finding, offending: str = "") -> Effects:
    """Log the breach and, on the crow's first breach on this subject, quarantine it, in
    the caller's transaction; the flag to say (the owner's decision opens on it once
    said) is returned. Nothing to say when the breach was logged only (already flagged
    on this subject, or the crow is no longer active)."""
    with transaction.atomic():
        lock_event_log()
        breach = record_breach(
            crow.name, kind=finding.kind, score=finding.score, evidence=finding.evidence,
            nest_id=nest.nest_id, msg_id=offending, subject=finding.subject or offending,
        )
        # The crow's debate rooms before the crow, as every grounding takes them
        # (flock.actions.before_crow_grounded): this room is held already.
        lock_for_grounding(crow.name)
        current = Crow.objects.select_for_update().get(pk=crow.pk)
        if not breach.flagged or current.status != Crow.Status.ACTIVE:
            return FLAGGED_BEFORE
        quarantine_crow(current, breach=breach, nest_id=nest.nest_id, by=SENTRY)
    phrase = reinstate_phrase(current.name)
    words = BREACH_WORDS.get(finding.kind, finding.kind)

    def put_to_the_owner(flagged: NestMessage) -> None:
        open_decision(
            kind=Decision.Kind.QUARANTINE,
            subject=current.name,
            crow=current.name,
            question=f"The Sentry quarantined {current.name} for a {words} in {nest.nest_id}. Reinstate {current.name}?",
            phrase=phrase,
            recommendation=(
                f"Read the evidence first. Reinstate {current.name} if it was a false alarm; "
                f"retire it if it keeps breaking its contract."
            ),
            evidence=finding.evidence,
            nest_id=nest.nest_id,
            msg_id=flagged.msg_id,
            refers_to=offending,
            breach=breach,
        )

    return Effects(done=True, say=[Say(
        author=SENTRY, text=_flag_text(current, finding, phrase, ""), kind=MessageKind.FLAG, to=OWNER,
        refers_to=offending, nest=nest, then=put_to_the_owner,
    )])


# A breach logged only: the crow's message still changes nothing else and calls no one.
FLAGGED_BEFORE = Effects(done=True)


def react(posted: Posted) -> Effects:
    """A crow's post the Sentry read as a breach (under the lock, before it was stored):
    the crow is quarantined and flagged, and its message changes nothing else."""
    if posted.finding is None or posted.crow is None:
        return NOTHING
    return flag(posted.crow, nest=posted.room, finding=posted.finding, offending=posted.message.msg_id)


# --- a quarantined crow addressed --------------------------------------------------------


def quarantine_notice(posted: Posted) -> Effects:
    """The harness's notice when the owner (or a crow) addresses a quarantined crow, so
    the message does not meet silence: a quarantined crow never answers, and the one who
    addressed it hears why."""
    text = _quarantine_words(posted.message, invoked=posted.invoked)
    if not text:
        return NOTHING
    return Effects(say=[Say(author=HARNESS, text=text, to=posted.message.author, refers_to=posted.message.msg_id)])


def _quarantine_words(message: NestMessage, *, invoked: Invocation | None = None) -> str:
    """The notice, or "" when there is nothing to say. An owner's unaddressed question or
    request that invoked nobody was Quill's to answer or route (docs/CHATROOM.md): with
    Quill quarantined, the owner hears that instead."""
    if message.author in HARNESS_AUTHORS or message.kind in HARNESS_KINDS:
        return ""
    name = message.to if message.to and message.to != OWNER else ""
    if not name and message.author == OWNER and message.nest.kind == Nest.Kind.DIRECT:
        dm_crow = queries.direct_chat_crow(message.nest.nest_id)
        name = dm_crow.name if dm_crow is not None else ""
    unaddressed = not name
    if unaddressed and invoked is None and message.author == OWNER:
        if message.kind == MessageKind.REQUEST or is_question(message.text):
            name = Crow.objects.filter(role=Crow.Role.ASSISTANT).values_list("name", flat=True).first() or ""
    if not name:
        return ""
    crow = Crow.objects.filter(name=name).first()
    if crow is None or crow.status != Crow.Status.QUARANTINED:
        return ""
    decision = open_decision_for_crow(crow.name)
    # "retire" said in a room is talk (only the phrase answers there), so the notice names
    # the buttons that work instead.
    retire = "" if crow.role in KEPT_ROLES else ", or press Retire on the decision's card"
    if decision is not None:
        how = f"Your decision {decision.decision_id} is open: post “{decision.phrase}” to reinstate it{retire}."
    else:
        how = f"Only the owner can reinstate it (Reinstate, on /crows/{crow.name}); meanwhile ask another crow."
    if unaddressed and message.nest.kind != Nest.Kind.DIRECT:
        how += " Address a crow by @name meanwhile: nobody routes unaddressed messages."
    return f"@{message.author} {crow.name} is quarantined and will not answer {message.msg_id}. {how}"
