"""The trust app's hooks, in one place: TrustConfig.ready() imports this module (the one
import that must wait for Django's app registry) and calls `wire`."""

from __future__ import annotations

from crows_site.state import register_snapshot_part
from flock import worker
from trust import queries, tasks
from trust.actions import reschedule_decision_timeouts, reschedule_timeouts, timers


def wire() -> None:
    # The actions schedule their fail-safe timers through hooks, so they never import the
    # tasks (which run them).
    timers.wire(approval=tasks.schedule_approval_timeout, decision=tasks.schedule_decision_expiry)
    register_snapshot_part("pending_approvals", queries.pending_approvals)
    register_snapshot_part("open_decisions", queries.open_decisions)
    # Approvals waiting across a restart must still time out (docs/LISTS.md).
    worker.on_start(reschedule_timeouts)
    # So must open owner decisions (docs/GOVERNANCE.md).
    worker.on_start(reschedule_decision_timeouts)
