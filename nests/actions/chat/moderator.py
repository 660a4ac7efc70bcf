"""Boss moderating a debate on the owner's word (docs/GOVERNANCE.md): starting it, stopping
it, cueing a stalled speaker again, and stopping the debates of a crow that can no longer
speak. These run from Boss's invocation or a grounding hook, not from a post, so they say
what they say through the chat core's loop (nests.actions.chat.react); the debate's rules
(whose turn it is, what each turn moves on) are the debates reactor's.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock.events import emit, lock_event_log
from flock.models import Crow
from flock.vocab import HARNESS, OWNER
from nests.actions.chat import react
from nests.actions.chat.claims import mark_answered
from nests.actions.chat.debates import (
    FINAL_FORMAT,
    QUARANTINED,
    RULES,
    VERDICT_FORMAT,
    moderator_says,
    plan_debate,
    round_open,
    stop_debate,
    taking_part,
)
from nests.actions.chat.ledger import open_expectation
from nests.models import Debate, Expectation, Invocation, Nest, NestMessage
from nests.queries_ledger import debate_record, running_debate


def _due_period() -> timedelta:
    return timedelta(seconds=max(settings.CROWS_EXPECTATION_DUE_S, 1))


def start_debate(inv: Invocation, boss: Crow) -> NestMessage | str:
    """Boss reads the owner's order and starts the debate: the kickoff (returned, as
    Boss's reply to the order) and round 1's first cue. A str is Boss's refusal."""
    trigger = inv.trigger
    with transaction.atomic():
        lock_event_log()
        nest = Nest.objects.select_for_update().get(pk=trigger.nest_id)
        current = running_debate(nest)
        if current is not None:
            return f"One debate at a time: {current.debate_id} on “{current.question}” is still running."
        plan, why = plan_debate(trigger)
        if plan is None:
            return why
        debate = Debate.objects.create(
            debate_id=f"new-{trigger.pk}", nest=nest, question=plan["question"], moderator=boss.name,
            crows=plan["crows"], stances=plan["stances"], judge=plan["judge"], rounds=plan["rounds"],
            turn_order=plan["turn_order"], asked_msg_id=trigger.msg_id,
        )
        debate.debate_id = f"debate-{debate.pk}"
        debate.save(update_fields=["debate_id"])
        stances = "; ".join(f"@{c} argues {s}" for c, s in plan["stances"].items())
        order = ", then ".join(plan["crows"])
        kickoff = react.speak(moderator_says(
            debate,
            f"Debate {debate.debate_id}, on the owner's word. Question: “{plan['question']}”. Stances: {stances}. "
            f"Judge: @{plan['judge']}. Rules: {RULES}. Rounds: {plan['rounds']}, one turn each per round, "
            + ("in this order every round: " + order + ". " if plan["turn_order"] else f"openers alternate (round 1: {order}). ")
            + f"I cue each speaker; anyone speaking out of turn is nudged, not counted. "
            f"Final positions in the format “{FINAL_FORMAT}”; the judge closes with “{VERDICT_FORMAT}”.",
            to=OWNER, refers_to=trigger.msg_id, invocation=inv,
        ), room=nest)
        debate.kickoff_msg_id = kickoff.msg_id
        debate.round = 1
        debate.save(update_fields=["kickoff_msg_id", "round"])
        emit("debate.started", debate_record(debate))
        turns = len(plan["crows"]) * (plan["rounds"] + 1) + 1
        open_expectation(
            kickoff, crow=boss.name, check=Expectation.Check.ROUNDS_COMPLETED, debate=debate,
            expected=f"{debate.debate_id} runs {plan['rounds']} rounds, final positions and the judge's call",
            due_at=timezone.now() + (turns + 1) * _due_period(),
        )
        mark_answered(trigger)
        react.speak(round_open(debate, kickoff.msg_id), room=nest)
    return kickoff


def stop_on_owners_word(inv: Invocation, boss: Crow) -> NestMessage | str:
    """The owner told Boss to stop the room's debate. A str is Boss's answer when there
    is none to stop."""
    with transaction.atomic():
        lock_event_log()
        # The room, then the debate: the order a post takes them in.
        Nest.objects.select_for_update().get(pk=inv.nest_id)
        debate = running_debate(inv.nest, lock=True)
        if debate is None:
            return "No debate is running in this room."
        mark_answered(inv.trigger)
        said = stop_debate(debate, why="the owner stopped it", by=OWNER, refers_to=inv.trigger.msg_id, invocation=inv)
        return react.speak(said, room=inv.nest)


def stop_for_grounded(crow: str, why: str, *, nest: Nest | None = None) -> list[NestMessage]:
    """The grounding hook: a crow can no longer speak (`why`: "was quarantined", "was
    retired", "left the room"): every running debate it takes part in (in `nest`, or
    anywhere) stops. Call inside the transaction that grounded it."""
    said = []
    for pk, nest_pk in taking_part(crow, nest):
        # The room, then the debate, as a post takes them; still running once both are held?
        room = Nest.objects.select_for_update().get(pk=nest_pk)
        debate = Debate.objects.select_for_update().filter(pk=pk, status=Debate.Status.RUNNING).first()
        if debate is None:
            continue
        role = "the moderator" if crow == debate.moderator else "the judge" if crow == debate.judge else "a debater"
        stopped = stop_debate(debate, why=f"{crow}, {role}, {why}", by=HARNESS, grounded=crow, blame=why == QUARANTINED)
        said.append(react.speak(stopped, room=room))
    return said


def recue(inv: Invocation, boss: Crow) -> NestMessage | None:
    """Boss nudged about a stalled debate: it cues the current speaker again."""
    with transaction.atomic():
        lock_event_log()
        Nest.objects.select_for_update().get(pk=inv.nest_id)  # the room, then the debate
        debate = running_debate(inv.nest, lock=True)
        if debate is None or debate.moderator != boss.name or not debate.cued:
            return None
        # Cleared while the new cue is said, so dispatch invokes the cued crow again.
        debate.cue_msg_id = ""
        debate.save(update_fields=["cue_msg_id"])

        def kept(cue: NestMessage) -> None:
            debate.cue_msg_id = cue.msg_id
            debate.save(update_fields=["cue_msg_id"])

        return react.speak(moderator_says(
            debate, f"@{debate.cued}, we are waiting on you in {debate.debate_id}: your turn.",
            to=debate.cued, refers_to=debate.kickoff_msg_id, invocation=inv, then=kept,
        ), room=inv.nest)
