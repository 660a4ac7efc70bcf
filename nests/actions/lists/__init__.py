"""The list pipeline: intake, triage, flights, the Elder, approvals, banter, the end.

docs/LISTS.md walks through it. Importing this package registers its event names;
nests/wiring.py hands its hooks to the trust app (strikes, verdicts), the worker
(start-up recovery) and the state snapshot, and its tasks to `queue`, at start-up.
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

