from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _seed(sender: AppConfig, **kwargs: object) -> None:
    from flock.actions import seed_flock
    from nests.actions import ensure_todo_nest

    seed_flock()
    ensure_todo_nest()


class NestsConfig(AppConfig):
    name = "nests"
    verbose_name = "Nests"

    def ready(self) -> None:
        from flock.stream.consumer import register_stream_key
        from nests import queries

        # A fresh database after `migrate` holds the ten crows and the `todo` nest.
        post_migrate.connect(_seed, sender=self, dispatch_uid="crows-seed")
        # The list pipeline registers its hooks (verdicts, strikes, start-up recovery).
        import nests.actions.lists  # noqa: F401
        register_stream_key("nest_id", queries.nest_exists)
        # CROWS_RETENTION_DAYS: keep one daily prune queued (docs/OPERATING.md).
        from flock import worker
        from nests.actions.retention import schedule_retention

        worker.on_start(schedule_retention)
        # The chat core queues its tasks through hooks, so it never imports them (they run it).
        from nests import tasks_chat
        from nests.actions.chat import queue

        queue.wire(invoke=tasks_chat.enqueue_invocation, check=tasks_chat.enqueue_check)
        # Open expectations keep their timers across a restart (docs/GOVERNANCE.md).
        from nests.actions.chat.ledger import reschedule_expectation_checks

        worker.on_start(reschedule_expectation_checks)
        # A model the owner picks for a crow is scored like Boss's picks (docs/GOVERNANCE.md).
        from flock.actions import on_crow_updated
        from nests.actions.chat.orchestration import score_owner_model_change

        on_crow_updated(score_owner_model_change)
        # A debate cannot go on without its debaters, judge or moderator (docs/GOVERNANCE.md).
        from flock.actions import before_crow_grounded, on_crow_grounded
        from nests.actions.chat.debates import lock_debate_rooms
        from nests.actions.chat.moderator import stop_for_grounded

        before_crow_grounded(lock_debate_rooms)
        on_crow_grounded(stop_for_grounded)
