"""The owner's corrections from the control panel (the admin): putting a holder back to
stranger and lifting a requester's cooldown. Both append or close rows the way the rest
of trust does, and emit events carrying `by`, who did it (docs/OPERATING.md)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from flock.errors import BadInput, NotFound
from flock.events import emit
from flock.personas import TASK_TYPES
from trust.actions.ledger import APPEND_TRIES, append_entry, newest_balance
from trust.actions.locking import lock_event_log
from trust.models import STRANGER, Post, Strike, TrustEntry
from trust.payloads import CooldownLifted, TrustChanged


def reset_trust(holder: str, *, task_type: str, by: str) -> TrustEntry | None:
    """Put `holder` back to stranger for `task_type`, with a fresh streak.

    Appends one ledger entry (outcome and source `reset`), so the ledger stays the whole
    truth, and emits `trust.changed` when the level moved. None when the holder already
    was a stranger with no streak: there was nothing to reset."""
    holder = (holder or "").strip()
    if not holder:
        raise BadInput("holder is required")
    if task_type not in TASK_TYPES:
        raise BadInput(f"task_type must be one of {', '.join(TASK_TYPES)}, got {task_type!r}")
    with transaction.atomic():
        lock_event_log()
        for _ in range(APPEND_TRIES):
            level, streak, seq = newest_balance(holder, task_type)
            if level == STRANGER and streak == 0:
                return None
            entry = TrustEntry(
                holder=holder,
                task_type=task_type,
                outcome=TrustEntry.Outcome.RESET,
                source=TrustEntry.Source.RESET,
                level_before=level,
                level=STRANGER,
                streak=0,
                seq=seq + 1,
            )
            if append_entry(entry):
                break
        else:
            raise RuntimeError(f"could not append to {holder}/{task_type}'s trust ledger in {APPEND_TRIES} tries")
        if level != STRANGER:
            reset: TrustChanged = {"holder": holder, "task_type": task_type, "from": level, "to": STRANGER, "by": by}
            emit("trust.changed", reset)
    return entry


def lift_cooldown(key: str, *, by: str) -> int:
    """End the cooldown of a poster (a strike key such as "requester:Bob") now.

    The strikes stay as history; their `until` moves to now, and the posts counted in
    the rate's rolling minute are forgiven (they earned the strike: still counted, they
    would earn a doubled one at once), so the next post is admitted. The next strike
    still doubles, since it counts the day's strikes. Emits `requester.cooldown_lifted`;
    returns how many strikes were cut short."""
    with transaction.atomic():
        lock_event_log()
        now = timezone.now()
        active = list(Strike.objects.select_for_update().filter(key=key, until__gt=now))
        if not active:
            raise NotFound(f"{key!r} is not cooling down")
        Strike.objects.filter(id__in=[s.id for s in active]).update(until=now)
        Post.objects.filter(key=key).delete()
        kind, _, name = key.partition(":")
        emit(
            "requester.cooldown_lifted",
            CooldownLifted(key=key, requester=name or kind, strikes=len(active), by=by),
        )
    return len(active)
