"""Every hook the nests app hands to the rest of the code, in one place. NestsConfig.ready()
imports this module (the one import that must wait for Django's app registry) and calls
`wire`; nothing here runs on import."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_migrate

from crows_site.state import register_snapshot_part
from flock import worker
from flock.actions import before_crow_grounded, on_crow_grounded, on_crow_updated, seed_flock
from flock.stream.consumer import register_stream_key
from nests import queries, tasks, tasks_chat, tasks_upkeep
from nests.actions import ensure_todo_nest
from nests.actions.chat import queue
from nests.actions.chat.boss import hatch_on_approval
from nests.actions.chat.choices import hand_back_choice
from nests.actions.chat.debates import lock_debate_rooms
from nests.actions.chat.deliveries import mark_delivery_overruled, mark_delivery_verdict
from nests.actions.chat.idle import retire_on_approval
from nests.actions.chat.ledger import reschedule_expectation_checks
from nests.actions.chat.moderator import stop_for_grounded
from nests.actions.chat.orchestration import score_owner_model_change
from nests.actions.chat.regulate import top_up_on_approval
from nests.actions.lists import prank_flying_lists, recover_lists, resume_after_verdict
from nests.actions.lists import queue as list_queue
from nests.queries_lists import open_lists
from nests.tasks_retention import schedule_retention
from trust.actions import on_decision_closed, on_overrule, on_strike, on_verdict


def _seed(sender: Any, **kwargs: object) -> None:
    seed_flock()
    ensure_todo_nest()


def wire(app: Any) -> None:
    # The list pipeline: the owner's verdicts move its items on (chat deliveries are judged
    # by the same verdicts, docs/CHATROOM.md), a strike pranks the culprit's flying lists,
    # start-up recovers the lists a restart interrupted, and the pipeline queues its tasks
    # through hooks, so it never imports them (they run it).
    on_verdict(resume_after_verdict)
    on_verdict(mark_delivery_verdict)
    on_overrule(mark_delivery_overruled)
    on_strike(prank_flying_lists)
    worker.on_start(recover_lists)
    register_snapshot_part("open_lists", open_lists)
    list_queue.wire(fly_sortie=tasks.fly_sortie_task, finish_list=tasks.finish_list_task, speak_banter=tasks.speak_banter_task)
    # A fresh database after `migrate` holds the ten crows and the `todo` nest.
    post_migrate.connect(_seed, sender=app, dispatch_uid="crows-seed")
    register_stream_key("nest_id", queries.nest_exists)
    # CROWS_RETENTION_DAYS: keep one daily prune queued (docs/OPERATING.md).
    worker.on_start(schedule_retention)
    # The chat core queues its tasks through hooks, so it never imports them (they run it).
    queue.wire(invoke=tasks_chat.enqueue_invocation, check=tasks_chat.enqueue_check)
    # Open expectations keep their timers across a restart (docs/GOVERNANCE.md).
    worker.on_start(reschedule_expectation_checks)
    # A model the owner picks for a crow is scored like Boss's picks (docs/GOVERNANCE.md).
    on_crow_updated(score_owner_model_change)
    # A debate cannot go on without its debaters, judge or moderator (docs/GOVERNANCE.md).
    before_crow_grounded(lock_debate_rooms)
    on_crow_grounded(stop_for_grounded)
    # A closed choice goes back to the crow that asked for it (docs/GOVERNANCE.md, 1).
    on_decision_closed(hand_back_choice)
    # A crow started above regular is hatched on the owner's approval phrase (docs/GOVERNANCE.md, 3).
    on_decision_closed(hatch_on_approval)
    # Boss proposes, the owner's phrase carries it out: an idle crow retired, a room topped up.
    on_decision_closed(retire_on_approval)
    on_decision_closed(top_up_on_approval)
    # CROWS_IDLE_RETIRE_DAYS: keep one daily idle review queued (docs/GOVERNANCE.md, 3).
    worker.on_start(tasks_upkeep.schedule_idle_review)
