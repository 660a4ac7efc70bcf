"""Jev judges the room's open expectations against each new message (docs/GOVERNANCE.md,
"4. Jev judges expectations against the room").

Jev's `expectation_met` question reads a pair: the message that opened the expectation and
the new one, each as `"<Speaker>: <text>"`, joined by `flock.jev.pairs.pair_text` (the same
function its training lines went through). It answers met, missed or pending.

- `read_met` asks it for every open expectation of the room (the newest MAX_JUDGED), outside
  any transaction, as every Jev question is asked (it may load a model).
- `react`, a reactor after the ledger's own rules, acts on the answers for the expectations
  still open: every answer is logged with its probabilities (`flock.models.JevTag`, subject
  the message, outcome the expectation and what was done); a message by the responsible
  crow or the owner that Jev reads as `met` in its high band closes the expectation met;
  one read as `missed` in its high band nudges the crow at once, once per expectation,
  instead of waiting for the deadline. Anything else is kept on the expectation as Jev's
  latest reading. Deadlines still apply: the timer nudges and escalates as before.
"""

from __future__ import annotations

import logging
from typing import Any

from flock import jev as jev_service
from flock.actions import log_jev_tag
from flock.jev.pairs import pair_text, speaker_line
from flock.models import Crow
from flock.vocab import HARNESS_AUTHORS, OWNER
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.actions.chat.ledger import close_expectation, nudge, nudge_limit
from nests.models import Expectation, Nest, NestMessage
from nests.queries import crow_members

log = logging.getLogger("crows.expectations")

MET_QUESTION = "expectation_met"
MET, MISSED, PENDING = "met", "missed", "pending"
# How many of a room's open expectations one message is judged against (the newest).
MAX_JUDGED = 20


def met_text(opening: NestMessage, author: str, text: str) -> str:
    """What Jev reads: the opening message and the new one, as its writers wrote pairs."""
    return pair_text(speaker_line(opening.author, opening.text), speaker_line(author, text))


def _judged(nest: Nest) -> list[Expectation]:
    rows = (
        Expectation.objects.filter(nest=nest, status__in=Expectation.LIVE)
        .exclude(check_name__in=Expectation.DEBATE_CHECKS)
        .select_related("message")
        .order_by("-id")[:MAX_JUDGED]
    )
    return list(rows)


def read_met(nest: Nest, *, author: str, text: str) -> dict[int, Any]:
    """Jev's `expectation_met` answer for each open expectation of the room, by its pk;
    {} when the room has none or Jev cannot answer (the ledger's rules and its timer
    still hold). Call outside the transaction."""
    if author in HARNESS_AUTHORS:
        return {}
    answers: dict[int, Any] = {}
    for exp in _judged(nest):
        try:
            answers[exp.pk] = jev_service.ask(MET_QUESTION, met_text(exp.message, author, text))
        except Exception:
            # No model (its writers' lines not imported) or a broken one: the rules decide.
            log.debug("Jev could not answer %r", MET_QUESTION, exc_info=True)
            return {}
    return answers


def _p(answer: Any) -> float:
    return round(float((answer.probs or {}).get(answer.choice, 0.0)), 4)


def _may_be_nudged(exp: Expectation) -> bool:
    crow = Crow.objects.filter(name=exp.crow).first()
    return (
        crow is not None
        and crow.status == Crow.Status.ACTIVE
        and exp.nudges < nudge_limit(exp)
        and exp.crow in crow_members(exp.nest)
    )


def missed_prompt(exp: Expectation, message: NestMessage, p: float) -> str:
    return (
        f"@{exp.crow}, {exp.expectation_id}: Jev reads {message.msg_id} as missing it (p {p:.2f}): {exp.expected}. "
        "Deliver it now, or decline with a reason; a reply with nothing new is not progress."
    )


def judge(exp: Expectation, message: NestMessage, answer: Any) -> tuple[str, Say | None]:
    """What Jev's answer does to one open expectation: (what was done, a nudge to say)."""
    p = _p(answer)
    sure = answer.band == "high"
    responsible = message.author in (exp.crow, OWNER)
    exp.jev = {**(exp.jev or {}), "met": {"choice": answer.choice, "p": p, "band": answer.band, "msg_id": message.msg_id}}
    if sure and responsible and answer.choice == MET:
        close_expectation(
            exp, status=Expectation.Status.MET, by_msg_id=message.msg_id,
            reason=f"Jev read {message.msg_id} as meeting it (p {p:.2f})", confidence=p,
        )
        return "closed met", None
    if sure and responsible and answer.choice == MISSED and not exp.jev.get("early_nudge") and _may_be_nudged(exp):
        exp.jev["early_nudge"] = message.msg_id
        exp.scored, exp.confidence = MISSED, p
        exp.save(update_fields=["jev", "scored", "confidence"])
        return "nudged", nudge(exp, prompt=missed_prompt(exp, message, p))
    exp.save(update_fields=["jev"])
    return "read", None


def react(posted: Posted) -> Effects:
    """Jev's answers on the room's open expectations, acted on (after the ledger's rules,
    which may have closed some already: those are logged and left alone)."""
    message = posted.message
    if not posted.met_answers or message.author in HARNESS_AUTHORS:
        return NOTHING
    nudges: list[Say] = []
    rows = Expectation.objects.select_for_update().select_related("nest", "message").filter(pk__in=posted.met_answers)
    for exp in rows.order_by("id"):
        answer = posted.met_answers[exp.pk]
        done, said = judge(exp, message, answer) if exp.status in Expectation.LIVE else (f"already {exp.status}", None)
        log_jev_tag(
            answer, subject=message.msg_id, text=met_text(exp.message, message.author, message.text),
            outcome={"expectation_id": exp.expectation_id, "done": done},
        )
        if said is not None:
            nudges.append(said)
    return Effects(say=nudges)
