"""Lock order with the event log: every action here and in the list pipeline that locks
rows and then emits takes the event log's lock first (see flock.events.lock_event_log)."""

from flock.events import lock_event_log

__all__ = ["lock_event_log"]
