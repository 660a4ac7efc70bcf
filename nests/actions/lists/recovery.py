"""Start-up recovery of lists left unfinished by a dead server (worker.on_start).

The task queue survives a restart by itself (interrupted tasks are re-queued), and every
step is idempotent, so recovery only has to make sure each unfinished piece of work has a
task: a sortie planned or in the air gets one (a sortie in the air under a dead process
is flown again, without a second take-off), slots freed by the dead process are handed to
waiting sorties, banter the dead process was speaking is dropped (banter is never worth
waiting for), and a list whose items all ended gets its finish queued. Duplicate tasks
are harmless: the first to lock the row does the work, and a run that finds its sortie in
the air in a process still alive (that run's lease renewed) leaves it alone
(flights._launch). Work a live `db_worker` holds is not even queued again (a server
started beside db_workers with its embedded worker on).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from flock.worker import held_elsewhere
from nests.actions.lists import queue
from nests.actions.lists.ending import queue_finish
from nests.actions.lists.flights import hand_over_slots, lock_gate, recount_gate
from nests.actions.lists.sorties import queue_sortie
from nests.models import Banter, Item, Sortie, TodoList

log = logging.getLogger("crows.lists")


def recover_lists() -> dict[str, int]:
    counts = {"sorties": 0, "banter_dropped": 0, "finishes": 0, "woken": 0}
    # Work a live db_worker holds is not the dead process's (flock.worker.held_elsewhere).
    flying_elsewhere = held_elsewhere(queue.fly_sortie_task())
    speaking_elsewhere = held_elsewhere(queue.speak_banter_task())
    with transaction.atomic():
        in_the_air = Banter.objects.select_for_update().filter(status=Banter.Status.FLYING)
        for banter in in_the_air.exclude(pk__in=speaking_elsewhere):
            # Its list's row is locked first, as everywhere a list's lines in the air change.
            TodoList.objects.select_for_update().get(pk=banter.todo_list_id)
            banter.status, banter.why_dropped = Banter.Status.DROPPED, "interrupted by a restart"
            banter.landed_at = timezone.now()
            banter.save(update_fields=["status", "why_dropped", "landed_at"])
            counts["banter_dropped"] += 1
        unfinished = TodoList.objects.filter(status=TodoList.Status.FLYING)
        for sortie in Sortie.objects.filter(
            todo_list__in=unfinished, status__in=(Sortie.Status.PLANNED, Sortie.Status.FLYING)
        ).exclude(pk__in=flying_elsewhere):
            queue_sortie(sortie)
            counts["sorties"] += 1
        for todo in unfinished:
            if not todo.items.exclude(stage__in=Item.ENDED).exists():
                queue_finish(todo)
                counts["finishes"] += 1
        gate = lock_gate()  # last, as everywhere (nests/actions/lists/flights.py)
        # PostgreSQL: the gate's count starts again from the rows, whatever a dead
        # process left it at.
        counts["woken"] = hand_over_slots(recount_gate() if gate is not None else None)
    if any(counts.values()):
        log.warning("recovered unfinished lists: %s", counts)
    return counts
