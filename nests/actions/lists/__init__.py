"""The list pipeline: intake, triage, flights, the Elder, approvals, banter, the end.

docs/LISTS.md walks through it. Importing this package registers its event names and its
hooks into the trust app (strikes, verdicts), the worker (start-up recovery) and the
state snapshot; nests.apps imports it at start-up.
"""

from nests.actions.lists.approvals import resume_after_verdict
from nests.actions.lists.banter import maybe_start_banter, speak_banter
from nests.actions.lists.ending import finish_list, mark_answered, skip_item
from nests.actions.lists.flights import abort_sortie, fly_sortie, land_sortie, launch_sortie
from nests.actions.lists.intake import post_list, split_items
from nests.actions.lists.pranks import prank_flying_lists
from nests.actions.lists.progress import answer_item, start_flights
from nests.actions.lists.recovery import recover_lists
from nests.actions.lists.retry import retry_item
from nests.actions.lists.triage import conclude_triage

__all__ = [
    "abort_sortie",
    "answer_item",
    "conclude_triage",
    "finish_list",
    "fly_sortie",
    "land_sortie",
    "launch_sortie",
    "mark_answered",
    "maybe_start_banter",
    "post_list",
    "prank_flying_lists",
    "recover_lists",
    "resume_after_verdict",
    "retry_item",
    "skip_item",
    "speak_banter",
    "split_items",
    "start_flights",
]


def _register_hooks() -> None:
    # Runs once per process, at the first import of this package (nests.apps.ready).
    from crows_site.state import register_snapshot_part
    from flock import worker
    from nests.queries_lists import open_lists
    from trust.actions import on_overrule, on_strike, on_verdict

    on_verdict(resume_after_verdict)
    # Chat deliveries are judged by the same verdicts (docs/CHATROOM.md).
    from nests.actions.chat.deliveries import mark_delivery_overruled, mark_delivery_verdict

    on_verdict(mark_delivery_verdict)
    on_overrule(mark_delivery_overruled)
    on_strike(prank_flying_lists)
    worker.on_start(recover_lists)
    register_snapshot_part("open_lists", open_lists)


_register_hooks()
